"""Transactional producer workers: each op is one transaction over several partitions.

Outcomes of a txn op (the outcome of every send in it):
- ok: commit_transaction returned;
- fail: the transaction was aborted and the abort returned (deliberately, or after
  an error that requires abort): nothing of it is committed;
- info: anything else (a commit that timed out may still complete).
A worker whose op ended info starts a new process with a new producer under the
same transactional.id, which fences the old one, as a restarted application would.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from harness.history import HistoryWriter
from harness.log import log
from harness.spec import ProducerSpec, TopicSpec
from workloads.outcomes import Outcome
from workloads.processes import ProcessIds, UniqueValues
from workloads.producer import AckTracker, _abandon


@dataclass
class TxnWorker:
    spec: ProducerSpec
    topic: TopicSpec
    bootstrap: str
    history: HistoryWriter
    pids: ProcessIds
    values: UniqueValues
    acks: AckTracker
    stop: threading.Event
    transactional_id: str
    seed: int
    logger: Any = None
    extra_config: dict[str, Any] = field(default_factory=dict)
    ops: int = 0

    @property
    def _timeout_s(self) -> float:
        return self.spec.transaction_timeout_ms / 1000

    def _new_producer(self) -> Producer | None:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            **self.spec.client_config(),
            "transactional.id": self.transactional_id,
            "transaction.timeout.ms": self.spec.transaction_timeout_ms,
            "log_level": 3,
            **self.extra_config,
        }
        if self.logger is not None:
            conf["logger"] = self.logger
        while not self.stop.is_set():
            p = Producer(conf)
            try:
                p.init_transactions(self._timeout_s)
                return p
            except KafkaException as e:
                log(f"init_transactions for {self.transactional_id} failed, retrying: {e}")
                _abandon(p)
                self.stop.wait(1)
        return None

    def run(self) -> None:
        rng = random.Random(self.seed)
        process = self.pids.next()
        producer = self._new_producer()
        try:
            while producer is not None and not self.stop.is_set():
                outcome = self._txn_op(producer, process, rng)
                self.ops += 1
                if outcome == "info":
                    _abandon(producer)
                    process = self.pids.next()
                    producer = self._new_producer()
        finally:
            if producer is not None:
                _abandon(producer)

    def _txn_op(self, producer: Producer, process: int, rng: random.Random) -> Outcome:
        n = self.topic.partitions
        parts = rng.sample(range(n), min(self.spec.txn_partitions, n))
        micro = [
            {"op": "send", "topic": self.topic.name, "partition": parts[i % len(parts)], "value": v}
            for i, v in enumerate(self.values.take(self.spec.batch))
        ]
        abort = rng.random() < self.spec.abort_fraction
        self.history.invoke(process, "txn", micro)
        offsets: list[int | None] = [None] * len(micro)

        def report(i: int):
            def cb(err: KafkaError | None, msg: Message) -> None:
                if err is None and msg.offset() is not None and msg.offset() >= 0:
                    offsets[i] = msg.offset()

            return cb

        outcome: Outcome
        error: str | None = None
        try:
            producer.begin_transaction()
            for i, m in enumerate(micro):
                producer.produce(
                    m["topic"],
                    value=str(m["value"]).encode(),
                    partition=m["partition"],
                    on_delivery=report(i),
                )
            if self.spec.txn_delay_ms:
                self.stop.wait(self.spec.txn_delay_ms / 1000)
            if abort:
                # Send everything first, so the aborted records really reach the log
                # (an abort would otherwise purge them from the local queue).
                producer.flush(self._timeout_s)
                producer.abort_transaction(self._timeout_s)
                outcome, error = "fail", "aborted on purpose"
            else:
                producer.commit_transaction(self._timeout_s)
                outcome = "ok"
        except KafkaException as e:
            err = e.args[0]
            error = err.name()
            outcome = "info"
            if err.txn_requires_abort():
                try:
                    producer.abort_transaction(self._timeout_s)
                    outcome = "fail"
                except KafkaException as e2:
                    error += f",abort failed: {e2.args[0].name()}"
        except BufferError:
            error, outcome = "_QUEUE_FULL", "info"
        producer.poll(0)
        done = [{**m, "offset": offsets[i], "outcome": outcome} for i, m in enumerate(micro)]
        if outcome == "ok":
            for m in done:
                self.acks.record(m["partition"], m["offset"])
        self.history.complete(outcome, process, "txn", done, error)
        return outcome
