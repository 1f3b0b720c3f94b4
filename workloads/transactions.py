"""Transactional producer workers: each op is one transaction over several partitions.

Outcomes of a txn op (the outcome of every send in it):
- ok: commit_transaction returned;
- fail: the transaction was aborted and the abort returned (deliberately, or after
  an error that requires abort): nothing of it is committed;
- info: anything else (a commit that timed out may still complete).
A worker whose op ended info starts a new process with a new producer under the
same transactional.id, which fences the old one, as a restarted application would.
With `crash_fraction`, a worker crashes on purpose after its sends, before it ends
the transaction (error "client crashed").

With `txn_poll`, each transaction, after its sends are flushed and before it ends,
reads its partitions from the offsets its own sends got, and the op carries a
`{"op":"poll","records":[...]}` micro-op. A read_committed reader never sees its own
open transaction; a read_uncommitted one does (`precommitted-read`).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from harness.history import HistoryWriter
from harness.log import log
from harness.spec import ProducerSpec, TopicSpec
from workloads.consumer import new_consumer, records_of
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
    isolation_level: str = "read_committed"  # of the txn_poll reader
    ops: int = 0
    crashes: int = 0
    _reading: set[int] = field(default_factory=set)  # partitions the txn_poll reader has

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
        reader = (
            new_consumer(
                self.bootstrap, self.topic, self.isolation_level, self.logger, assign=False
            )
            if self.spec.txn_poll
            else None
        )
        try:
            while producer is not None and not self.stop.is_set():
                outcome = self._txn_op(producer, reader, process, rng)
                self.ops += 1
                if outcome == "info":
                    _abandon(producer)
                    process = self.pids.next()
                    producer = self._new_producer()
        finally:
            if producer is not None:
                _abandon(producer)
            if reader is not None:
                reader.close()

    def _read_own(
        self, producer: Producer, reader: Consumer, offsets: list[int | None], parts: list[int]
    ) -> list[dict[str, Any]]:
        """Flush, then read each partition from where this transaction's sends landed,
        until past them or for half a second (read_committed never gets there)."""
        producer.flush(self._timeout_s)
        span: dict[int, tuple[int, int]] = {}
        for p, o in zip(parts, offsets, strict=True):
            if o is not None:
                lo, hi = span.get(p, (o, o))
                span[p] = (min(lo, o), max(hi, o))
        if not span:
            return []
        for p, (lo, _) in span.items():
            tp = TopicPartition(self.topic.name, p, lo)
            if p not in self._reading:
                reader.incremental_assign([tp])
                self._reading.add(p)
                continue
            try:
                reader.seek(tp)
            except KafkaException:
                # Not fetching yet: start that partition over at the offset.
                reader.incremental_unassign([TopicPartition(self.topic.name, p)])
                reader.incremental_assign([tp])
        records: list[dict[str, Any]] = []
        reached: set[int] = set()
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline and len(reached) < len(span):
            got, _ = records_of(reader.consume(num_messages=500, timeout=0.05))
            for r in got:
                if r["partition"] in span:
                    records.append(r)
                    if r["offset"] >= span[r["partition"]][1]:
                        reached.add(r["partition"])
        return records

    def _txn_op(
        self,
        producer: Producer,
        reader: Consumer | None,
        process: int,
        rng: random.Random,
    ) -> Outcome:
        n = self.topic.partitions
        parts = rng.sample(range(n), min(self.spec.txn_partitions, n))
        micro = [
            {"op": "send", "topic": self.topic.name, "partition": parts[i % len(parts)], "value": v}
            for i, v in enumerate(self.values.take(self.spec.batch))
        ]
        abort = rng.random() < self.spec.abort_fraction
        crash = rng.random() < self.spec.crash_fraction
        if reader is not None:
            micro.append({"op": "poll"})
        sends = [m for m in micro if m["op"] == "send"]
        self.history.invoke(process, "txn", micro)
        offsets: list[int | None] = [None] * len(sends)
        read: list[dict[str, Any]] = []

        def report(i: int):
            def cb(err: KafkaError | None, msg: Message) -> None:
                if err is None and msg.offset() is not None and msg.offset() >= 0:
                    offsets[i] = msg.offset()

            return cb

        outcome: Outcome
        error: str | None = None
        try:
            producer.begin_transaction()
            for i, m in enumerate(sends):
                producer.produce(
                    m["topic"],
                    value=str(m["value"]).encode(),
                    partition=m["partition"],
                    on_delivery=report(i),
                )
            if self.spec.txn_delay_ms:
                self.stop.wait(self.spec.txn_delay_ms / 1000)
            if reader is not None:
                read = self._read_own(producer, reader, offsets, [m["partition"] for m in sends])
            if crash:
                # Some sends may be in the log, in a transaction nobody ends: the next
                # producer under this transactional.id aborts it when it fences us.
                producer.poll(0)
                self.crashes += 1
                outcome, error = "info", "client crashed"
            elif abort:
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
        done = [{**m, "offset": offsets[i], "outcome": outcome} for i, m in enumerate(sends)]
        if outcome == "ok":
            for m in done:
                self.acks.record(m["partition"], m["offset"])
        polled = [{"op": "poll", "records": read}] if reader is not None else []
        self.history.complete(outcome, process, "txn", done + polled, error)
        return outcome
