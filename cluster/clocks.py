"""A broker's wall clock as its Kafka process reads it, measured through Kafka itself.

A probe topic has one partition per broker, on that broker alone, with
`message.timestamp.type=LogAppendTime`: a record produced to it comes back stamped
with the broker JVM's `System.currentTimeMillis()`. Its offset from the host's clock
is that stamp against the midpoint of the request (error at most half the round trip,
which the answer gives). This is what a clock fault did, not what it asked for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_trial.contracts.errors import TrialError

PROBE_TOPIC = "kt-clock-probe"
SAMPLES = 3
# A producer that timed out this many records in a row is replaced (see _renew).
RENEW_AFTER = 3


@dataclass
class ClockProbe:
    nodes: list[int]
    bootstrap: Callable[[], str]
    admin: Callable[[], AdminClient]
    # How a producer is made: a test gives one that answers as it is told.
    make_producer: Callable[[dict[str, Any]], Producer] = Producer
    _producer: Producer | None = field(default=None, init=False)
    _made: bool = field(default=False, init=False)

    def ensure(self, timeout_s: float = 60) -> None:
        """Create the probe topic. Every broker must be registered and unfenced for
        its partition to be placed, so the runner does it once the cluster is ready;
        a broker just restarted is retried until `timeout_s`."""
        if self._made:
            return
        topic = NewTopic(
            PROBE_TOPIC,
            len(self.nodes),
            replica_assignment=[[n] for n in self.nodes],
            config={"message.timestamp.type": "LogAppendTime", "min.insync.replicas": "1"},
        )
        deadline = time.monotonic() + timeout_s
        while True:
            fut = self.admin().create_topics([topic], operation_timeout=30)[PROBE_TOPIC]
            try:
                fut.result(60)
                break
            except KafkaException as e:
                if e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    break
                if time.monotonic() > deadline:
                    raise TrialError(
                        f"could not create the clock probe topic: {e}",
                        "every broker must be up and registered (see the brokers' logs)",
                    ) from None
                time.sleep(1)
        self._made = True

    def _get_producer(self) -> Producer:
        if self._producer is None:
            self._producer = self.make_producer(
                {
                    "bootstrap.servers": self.bootstrap(),
                    "acks": "1",
                    "linger.ms": 0,
                    "message.timeout.ms": 5000,
                    "log_level": 0,
                }
            )
        return self._producer

    def offset(self, node: int, timeout_s: float = 30) -> dict[str, Any]:
        """Broker `node`'s clock minus the host's, in seconds (`offset_s`), with the
        round trip it was measured over (`rtt_ms`): the best of SAMPLES, as NTP takes
        the sample with the shortest round trip (the first after a restart can wait
        seconds for metadata). Retries until `timeout_s` while the broker is not yet
        leading its probe partition."""
        got = [self._sample(node, timeout_s) for _ in range(SAMPLES)]
        return min(got, key=lambda g: g["rtt_ms"])

    def _sample(self, node: int, timeout_s: float) -> dict[str, Any]:
        self.ensure()
        part = self.nodes.index(node)
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        failures = 0
        while time.monotonic() < deadline:
            if failures and failures % RENEW_AFTER == 0:
                self._renew()
            p = self._get_producer()
            got: list[Any] = []
            t0 = time.time()
            p.produce(
                PROBE_TOPIC,
                b"probe",
                partition=part,
                on_delivery=lambda e, m, got=got: got.append((e, m)),
            )
            p.flush(6)
            t1 = time.time()
            if got and got[0][0] is None:
                kind, stamp = got[0][1].timestamp()
                if kind == 2:  # TIMESTAMP_LOG_APPEND_TIME: the broker's own stamp
                    return {
                        "offset_s": round(stamp / 1000 - (t0 + t1) / 2, 3),
                        "rtt_ms": round((t1 - t0) * 1000, 1),
                    }
                last = f"timestamp type {kind}, not LogAppendTime"
            elif got:
                last = str(got[0][0])
            failures += 1
            time.sleep(0.5)
        raise TrialError(
            f"broker {node}'s clock could not be measured after {failures} tries: {last}; "
            f"{self._where(part)}",
            "the broker must be running and leading its clock probe partition",
        )

    def _renew(self) -> None:
        """A new producer: fresh metadata and connections. A restarted broker's probe
        partition was leaderless for a while, and one CI run's producer timed out
        every record to it for 90 s after the broker was back."""
        if self._producer is not None:
            self._producer.purge()
            self._producer.flush(0)
        self._producer = None

    def _where(self, part: int) -> str:
        """What the cluster says of the probe partition, for the error: its leader."""
        try:
            md = self.admin().list_topics(PROBE_TOPIC, timeout=5)
            p = md.topics[PROBE_TOPIC].partitions[part]
        except (KafkaException, KeyError) as e:
            return f"its probe partition could not be described: {e}"
        return f"probe partition {part}: leader {p.leader}, isr {list(p.isrs)}"
