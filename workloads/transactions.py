"""Transactional producer workers: each op is one transaction over several partitions.

Outcomes of a txn op (the outcome of every send in it):
- ok: commit_transaction returned;
- fail: the transaction was aborted and the abort returned (deliberately, or after
  an error that requires abort): nothing of it is committed;
- info: anything else (a commit that timed out may still complete).
A worker whose op ended info starts a new process with a new producer under the
same transactional.id, which fences the old one, as a restarted application would.
Each producer is one client (`client`, `seq` on its sends, as the producer workload
writes them), named in the transactional.id registry once its init_transactions
returned: the session a `hijack-txn` fences.
With `crash_fraction`, a worker crashes on purpose after its sends, before it ends
the transaction (error "client crashed").

With `txn_poll`, each transaction, after its sends are flushed and before it ends,
reads its partitions from the offsets its own sends got, and the op carries a
`{"op":"poll","records":[...]}` micro-op. A read_committed reader never sees its own
open transaction; a read_uncommitted one does (`precommitted-read`).
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.ops import Poll, Record, Send
from kafka_trial.contracts.transactional_ids import TXN_IDS
from kafka_trial.workloads.base import ClientContext, Counters, Lane
from kafka_trial.workloads.clients import (
    abandon,
    close_within,
    transactional_producer,
    transactional_sends,
)
from kafka_trial.workloads.consumer import new_consumer, records_of
from kafka_trial.workloads.outcomes import Outcome
from kafka_trial.workloads.pacing import Pacer
from kafka_trial.workloads.producer_process import ProcessProducer
from kafka_trial.workloads.settings import ProducerSpec

# A fresh cluster's first init_transactions waits for __transaction_state to be made
# and loaded (COORDINATOR_LOAD_IN_PROGRESS): with a 2 s timeout it never got there.
INIT_S = 30.0
MIN_CALL_S = 10.0


@dataclass
class TxnWorker:
    ctx: ClientContext
    lane: Lane
    spec: ProducerSpec
    topic: TopicSpec
    transactional_id: str
    isolation_level: str = "read_committed"  # of the txn_poll reader
    counts: Counters = field(default_factory=Counters)
    _reading: set[int] = field(default_factory=set)  # partitions the txn_poll reader has
    _client: int | None = None  # the current producer's client id (`_session`)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def _timeout_s(self) -> float:
        """How long a flush, commit or abort may block: the transaction's own timeout,
        but never under 10 s, as an application's client call (Java's max.block.ms is
        60 s) outlives a transaction timeout of a second or two."""
        return max(self.spec.transaction_timeout_ms / 1000, MIN_CALL_S)

    def _new_producer(self) -> Producer | None:
        conf = self.ctx.client_config(
            self.lane,
            **self.spec.client_config(),
            **{
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": self.spec.transaction_timeout_ms,
            },
        )
        if not self.spec.own_process:
            return transactional_producer(conf, self.ctx.stop, INIT_S)
        name = f"producer {self.transactional_id}"
        return transactional_producer(
            conf, self.ctx.stop, INIT_S, lambda c: ProcessProducer(c, name)
        )

    def run(self) -> None:
        # The hijack-txn fault takes this id over while the worker runs.
        TXN_IDS.register(self.transactional_id, "producer", self.ctx.client_config(self.lane))
        try:
            self._run()
        finally:
            TXN_IDS.unregister(self.transactional_id)

    def _session(self) -> Producer | None:
        """A new producer (its init_transactions returned), as a client of its own: its
        id goes on its sends and, only now that it holds the id, into the registry."""
        producer = self._new_producer()
        if producer is not None:
            self._client = self.ctx.client_ids.next()
            self._seq = itertools.count()
            TXN_IDS.session(self.transactional_id, self._client)
        return producer

    def _run(self) -> None:
        rng = random.Random(self.lane.seed)
        process = self.ctx.pids.next()
        producer = self._session()
        reader = (
            new_consumer(self.ctx, self.lane, self.topic, self.isolation_level, assign=False)
            if self.spec.txn_poll
            else None
        )
        spec = self.spec
        pacer = Pacer(spec.target_rate / spec.clients if spec.target_rate else None)
        try:
            while producer is not None and not self.ctx.stop.is_set():
                if not pacer.take(spec.batch):
                    self.ctx.stop.wait(pacer.wait_s(spec.batch))
                    continue
                outcome = self._txn_op(producer, reader, process, rng)
                self.counts.ops += 1
                if outcome == "info":
                    abandon(producer)
                    process = self.ctx.pids.next()
                    producer = self._session()
        finally:
            if producer is not None:
                abandon(producer)
            if reader is not None:
                close_within(reader, "txn reader")

    def _read_own(
        self, producer: Producer, reader: Consumer, offsets: list[int | None], parts: list[int]
    ) -> list[Record]:
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
        records: list[Record] = []
        reached: set[int] = set()
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline and len(reached) < len(span):
            got, _ = records_of(reader.consume(num_messages=500, timeout=0.05))
            for r in got:
                if r.partition in span:
                    records.append(r)
                    if r.offset >= span[r.partition][1]:
                        reached.add(r.partition)
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
        sends = [
            Send(
                self.topic.name, parts[i % len(parts)], v, client=self._client, seq=next(self._seq)
            )
            for i, v in enumerate(self.ctx.values.take(self.spec.batch))
        ]
        abort = rng.random() < self.spec.abort_fraction
        crash = rng.random() < self.spec.crash_fraction
        polls = [Poll()] if reader is not None else []
        self.ctx.history.invoke(process, "txn", [*sends, *polls])
        offsets, send_all = transactional_sends(sends, self.spec.partition_keys)
        read: list[Record] = []

        outcome: Outcome
        error: str | None = None
        try:
            producer.begin_transaction()
            send_all(producer)
            if self.spec.txn_delay_ms:
                self.ctx.stop.wait(self.spec.txn_delay_ms / 1000)
            if reader is not None:
                read = self._read_own(producer, reader, offsets, [m.partition for m in sends])
            if crash:
                # Some sends may be in the log, in a transaction nobody ends: the next
                # producer under this transactional.id aborts it when it fences us.
                producer.poll(0)
                self.counts.crashes += 1
                outcome, error = "info", "client crashed"
            elif abort:
                # Send everything first, so the aborted records really reach the log
                # (an abort would otherwise purge them from the local queue); unless
                # the abort is to overtake requests still on their way (KAFKA-17754).
                if not self.spec.abort_in_flight:
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
            if err.txn_requires_abort() or (self.spec.abort_after_error and not err.fatal()):
                try:
                    producer.abort_transaction(self._timeout_s)
                    outcome = "fail"
                except KafkaException as e2:
                    error += f",abort failed: {e2.args[0].name()}"
        except BufferError:
            error, outcome = "_QUEUE_FULL", "info"
        except SystemError as e:
            # The binding raised for a callback of its own (seen in a fence-txn-id run:
            # a flush of a producer being fenced, inside its librdkafka log callback).
            # What the transaction did is unknown; run() takes a new producer.
            error, outcome = f"SystemError: {e}"[:200], "info"
        try:
            producer.poll(0)
        except (KafkaException, SystemError) as e:
            # A fatal error (fenced when the coordinator aborted the transaction on its
            # timeout) is raised by poll too. The op's outcome stands, and run() takes
            # a new producer after an info op; uncaught, it ended the worker's thread
            # with the op open (clock-txn, docs/findings.md).
            error = error or (e.args[0].name() if isinstance(e, KafkaException) else str(e))
        done = [m.done(outcome, offsets[i], m.partition) for i, m in enumerate(sends)]
        self.ctx.acks_for(self.topic.name).record_sends(done)
        polled = [Poll(tuple(read))] if reader is not None else []
        self.ctx.history.complete(outcome, process, "txn", [*done, *polled], error)
        return outcome
