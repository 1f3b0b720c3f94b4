"""The consume-transform-produce copier (claim C11): reads the input topic in a
consumer group and writes each value to the output topic in the same transaction
that commits its input offsets (send_offsets_to_transaction).

The output value of input v is -(v + 1): values stay unique across the run, and
the checker maps them back. Each copy is one `txn` op whose micro-ops are the poll
(the input records) and the sends to the output topic; its type is the outcome of
the transaction. Copiers crash at random before committing and come back as new
processes under the same transactional.id, which fences and aborts the old one.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer

from harness.history import HistoryWriter
from harness.log import log
from harness.spec import CopierSpec, TopicSpec
from workloads.consumer import records_of
from workloads.processes import ProcessIds
from workloads.producer import AckTracker, _abandon


def output_value(v: int) -> int:
    return -(v + 1)


@dataclass
class CopierWorker:
    spec: CopierSpec
    source: TopicSpec
    sink: TopicSpec
    bootstrap: str
    history: HistoryWriter
    pids: ProcessIds
    acks: AckTracker
    stop: threading.Event
    group_id: str
    transactional_id: str
    seed: int
    logger: Any = None
    ops: int = 0
    crashes: int = 0

    def _clients(self) -> tuple[Consumer, Producer] | None:
        common: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "log_level": 3}
        if self.logger is not None:
            common["logger"] = self.logger
        while not self.stop.is_set():
            consumer = Consumer(
                {
                    **common,
                    "group.id": self.group_id,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "isolation.level": "read_committed",
                    "session.timeout.ms": 10000,
                }
            )
            consumer.subscribe([self.source.name])
            producer = Producer(
                {
                    **common,
                    "transactional.id": self.transactional_id,
                    "enable.idempotence": True,
                    "acks": "all",
                    "transaction.timeout.ms": 30000,
                    "delivery.timeout.ms": 25000,
                }
            )
            try:
                producer.init_transactions(30)
                return consumer, producer
            except KafkaException as e:
                log(f"copier init_transactions failed, retrying: {e}")
                consumer.close()
                _abandon(producer)
                self.stop.wait(1)
        return None

    def run(self) -> None:
        rng = random.Random(self.seed)
        process = self.pids.next()
        clients = self._clients()
        while clients is not None and not self.stop.is_set():
            consumer, producer = clients
            outcome = self._copy(consumer, producer, process, rng)
            if outcome == "info":
                consumer.close()
                _abandon(producer)
                process = self.pids.next()
                clients = self._clients()
        if clients is not None:
            clients[0].close()
            _abandon(clients[1])
        self._fence()

    def _fence(self) -> None:
        """Restart once more under the same transactional.id, which aborts a transaction
        a crash left open. Until then its offsets stay pending and block every
        read_committed look-up of the group's offsets (UNSTABLE_OFFSET_COMMIT)."""
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": self.transactional_id,
                "enable.idempotence": True,
                "log_level": 3,
            }
        )
        try:
            producer.init_transactions(30)
        except KafkaException as e:
            log(f"copier could not fence {self.transactional_id}: {e}")
        finally:
            _abandon(producer)

    def _copy(
        self, consumer: Consumer, producer: Producer, process: int, rng: random.Random
    ) -> str | None:
        try:
            msgs = consumer.consume(num_messages=self.spec.batch, timeout=0.5)
        except KafkaException:
            return "info"
        records, _ = records_of(msgs)
        records = [r for r in records if r["value"] is not None]
        if not records:
            return None
        sends = [
            {
                "op": "send",
                "topic": self.sink.name,
                "partition": r["partition"],
                "value": output_value(r["value"]),
            }
            for r in records
        ]
        self.history.invoke(process, "txn", [{"op": "poll"}, *sends])
        offsets: list[int | None] = [None] * len(sends)

        def report(i: int):
            def cb(err: Any, msg: Any) -> None:
                if err is None and msg.offset() is not None and msg.offset() >= 0:
                    offsets[i] = msg.offset()

            return cb

        outcome, error = "info", None
        try:
            producer.begin_transaction()
            for i, s in enumerate(sends):
                producer.produce(
                    s["topic"],
                    value=str(s["value"]).encode(),
                    partition=s["partition"],
                    on_delivery=report(i),
                )
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
            )
            if rng.random() < self.spec.crash_fraction:
                # Dies before committing: the next instance's init_transactions aborts it.
                self.crashes += 1
                error = "copier crashed before commit"
            else:
                producer.commit_transaction(30)
                outcome = "ok"
        except KafkaException as e:
            err = e.args[0]
            error = err.name()
            if err.txn_requires_abort():
                try:
                    producer.abort_transaction(30)
                    outcome = "fail"
                except KafkaException:
                    pass
        done = [{"op": "poll", "records": records}] + [
            {**s, "offset": offsets[i], "outcome": outcome} for i, s in enumerate(sends)
        ]
        if outcome == "ok":
            for s in done[1:]:
                self.acks.record(s["partition"], s["offset"])
        self.history.complete(outcome, process, "txn", done, error)  # type: ignore[arg-type]
        self.ops += 1
        if outcome == "fail":
            # Aborted: rewind to the committed offsets so the records are copied again.
            return "info"
        return outcome
