"""The consume-transform-produce copier (claim C11): reads the input topic in a
consumer group and writes each value to the output topic in the same transaction
that commits its input offsets (send_offsets_to_transaction).

The output value of input v is -(v + 1): values stay unique across the run, and
the checker maps them back. Each copy is one `txn` op whose micro-ops are the poll
(the input records) and the sends to the output topic; its type is the outcome of
the transaction. Copiers crash at random before committing and come back as new
processes under the same transactional.id, which fences and aborts the old one.
Each producer is one client (`client`, `seq` on its sends), named in the
transactional.id registry once its init_transactions returned: the session a
`hijack-txn` fences.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.group_ids import GROUP_IDS
from kafka_trial.contracts.log import log
from kafka_trial.contracts.ops import Poll, Send
from kafka_trial.contracts.transactional_ids import TXN_IDS
from kafka_trial.workloads.base import ClientContext, Counters, Lane
from kafka_trial.workloads.clients import (
    CLOSE_S,
    abandon,
    close_within,
    leave_group,
    transactional_producer,
    transactional_sends,
)
from kafka_trial.workloads.consumer import records_of
from kafka_trial.workloads.outcomes import Outcome
from kafka_trial.workloads.settings import CopierSpec

# Every transactional call of a copier waits at most this long.
COPIER_TXN_TIMEOUT_S = 30
# How long leave_group serves a copier's last rebalance (its default).
LEAVE_S = 10.0
# What a consume() waits for records.
CONSUME_S = 0.5


def copier_stop_s() -> float:
    """How long a copier may take to end once the run stops, at worst: inside its op,
    send_offsets_to_transaction, then commit_transaction and, when that fails,
    abort_transaction; then leaving its group and closing its consumer; then one more
    init_transactions to fence its transactional.id. Each waits its own bound, and
    the session waits for all of them in turn: a shorter wait can leave a copier's
    thread running into a campaign's next runs (docs/findings.md, "A copier that
    outlived its run")."""
    return 10 + CONSUME_S + 4 * COPIER_TXN_TIMEOUT_S + LEAVE_S + CLOSE_S


def output_value(v: int) -> int:
    return -(v + 1)


@dataclass
class CopierWorker:
    ctx: ClientContext
    lane: Lane
    spec: CopierSpec
    source: TopicSpec
    sink: TopicSpec
    group_id: str
    transactional_id: str
    counts: Counters = field(default_factory=Counters)
    _client: int | None = None  # the current producer's client id (`_clients`)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def _producer_config(self, **conf: Any) -> dict[str, Any]:
        return self.ctx.client_config(
            self.lane,
            **{
                "transactional.id": self.transactional_id,
                "enable.idempotence": True,
                **conf,
            },
        )

    def _debug(self, contexts: str) -> dict[str, Any]:
        return {"debug": contexts, "log_level": 7} if self.spec.debug else {}

    def _clients(self) -> tuple[Consumer, Producer] | None:
        stop = self.ctx.stop
        while not stop.is_set():
            consumer = Consumer(
                self.ctx.client_config(
                    self.lane,
                    **{
                        "group.id": self.group_id,
                        "enable.auto.commit": False,
                        "auto.offset.reset": "earliest",
                        "isolation.level": "read_committed",
                        "session.timeout.ms": 10000,
                        **self._debug("cgrp,fetch"),
                    },
                )
            )
            consumer.subscribe([self.source.name])
            conf = self._producer_config(
                **{
                    "acks": "all",
                    "transaction.timeout.ms": COPIER_TXN_TIMEOUT_S * 1000,
                    "delivery.timeout.ms": 25000,
                    **self._debug("eos"),
                }
            )
            producer = transactional_producer(conf, stop, COPIER_TXN_TIMEOUT_S)
            if producer is not None:
                # Named only now that it holds the id: the session a hijack fences.
                self._client, self._seq = self.ctx.client_ids.next(), itertools.count()
                TXN_IDS.session(self.transactional_id, self._client)
                return consumer, producer
            leave_group(consumer, "copier input")
            close_within(consumer, "copier input")
        return None

    def run(self) -> None:
        # The hijack-txn fault takes this id over while the copier runs.
        TXN_IDS.register(self.transactional_id, "copier", self.ctx.client_config(self.lane))
        # The group-coordinator role aims at this group's coordinator meanwhile.
        GROUP_IDS.register(self.group_id, "copier")
        try:
            self._run()
        finally:
            GROUP_IDS.unregister(self.group_id)
            TXN_IDS.unregister(self.transactional_id)

    def _run(self) -> None:
        rng = random.Random(self.lane.seed)
        process = self.ctx.pids.next()
        clients = self._clients()
        while clients is not None and not self.ctx.stop.is_set():
            consumer, producer = clients
            outcome = self._copy(consumer, producer, process, rng)
            if outcome == "info":
                leave_group(consumer, f"copier {process}", LEAVE_S)
                close_within(consumer, f"copier {process}")
                abandon(producer)
                process = self.ctx.pids.next()
                clients = self._clients()
        if clients is not None:
            leave_group(clients[0], f"copier {process}", LEAVE_S)
            close_within(clients[0], f"copier {process}")
            abandon(clients[1])
        self._fence()

    def _fence(self) -> None:
        """Restart once more under the same transactional.id, which aborts a transaction
        a crash left open. Until then its offsets stay pending and block every
        read_committed look-up of the group's offsets (UNSTABLE_OFFSET_COMMIT)."""
        producer = Producer(self._producer_config())
        try:
            producer.init_transactions(COPIER_TXN_TIMEOUT_S)
        except KafkaException as e:
            log(f"copier could not fence {self.transactional_id}: {e}")
        finally:
            abandon(producer)

    def _copy(
        self, consumer: Consumer, producer: Producer, process: int, rng: random.Random
    ) -> Outcome | None:
        try:
            msgs = consumer.consume(num_messages=self.spec.batch, timeout=CONSUME_S)
        except KafkaException:
            return "info"
        records = [r for r in records_of(msgs)[0] if r.value is not None]
        if not records:
            return None
        sends = [
            Send(
                self.sink.name,
                r.partition,
                output_value(r.value),
                client=self._client,
                seq=next(self._seq),
            )
            for r in records
            if r.value is not None
        ]
        history = self.ctx.history
        history.invoke(process, "txn", [Poll(), *sends])
        offsets, send_all = transactional_sends(sends)
        outcome: Outcome = "info"
        error: str | None = None
        try:
            producer.begin_transaction()
            send_all(producer)
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()),
                consumer.consumer_group_metadata(),
                COPIER_TXN_TIMEOUT_S,
            )
            if rng.random() < self.spec.crash_fraction:
                # Dies before committing: the next instance's init_transactions aborts it.
                self.counts.crashes += 1
                error = "copier crashed before commit"
            else:
                producer.commit_transaction(COPIER_TXN_TIMEOUT_S)
                outcome = "ok"
        except KafkaException as e:
            err = e.args[0]
            error = err.name()
            if err.txn_requires_abort():
                try:
                    producer.abort_transaction(COPIER_TXN_TIMEOUT_S)
                    outcome = "fail"
                except KafkaException:
                    pass
        done = [s.done(outcome, offsets[i], s.partition) for i, s in enumerate(sends)]
        self.ctx.acks_for(self.sink.name).record_sends(done)
        history.complete(outcome, process, "txn", [Poll(tuple(records)), *done], error)
        self.counts.ops += 1
        if outcome == "fail":
            # Aborted: rewind to the committed offsets so the records are copied again.
            return "info"
        return outcome
