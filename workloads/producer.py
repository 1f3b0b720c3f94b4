"""Producer workers: each op sends a batch of unique values and waits for every report.

An op is one history invoke and one completion. Within an op the values are
pipelined (up to max.in.flight requests), which is what lets retries reorder or
duplicate them when the settings allow it.

A worker whose op ended `info` (a timeout, or a deliberate client crash with sends
in flight) continues as a new process with a new client. With `resend_unacked`,
that new process first re-sends the values left unknown, as an application that
keeps its own outbox would: idempotence is per producer session, so this can
duplicate (claim C9). Those micro-ops carry `"resend": true`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.ops import Send
from kafka_trial.workloads.base import AckTracker, ClientContext, Counters, Lane
from kafka_trial.workloads.clients import abandon
from kafka_trial.workloads.outcomes import Outcome, classify
from kafka_trial.workloads.settings import ProducerSpec


def _op_type(outcomes: list[Outcome]) -> Outcome:
    if all(o == "ok" for o in outcomes):
        return "ok"
    if all(o == "fail" for o in outcomes):
        return "fail"
    return "info"


@dataclass
class ProducerWorker:
    ctx: ClientContext
    lane: Lane
    spec: ProducerSpec
    topic: TopicSpec
    counts: Counters = field(default_factory=Counters)

    @property
    def acks(self) -> AckTracker:
        return self.ctx.acks_for(self.topic.name)

    def _new_producer(self) -> Producer:
        return Producer(self.ctx.client_config(self.lane, **self.spec.client_config()))

    def run(self) -> None:
        process = self.ctx.pids.next()
        producer = self._new_producer()
        single_attempt = self.spec.retries == 0
        # librdkafka reports every message within delivery.timeout.ms; beyond that, unknown.
        wait_s = (self.spec.delivery_timeout_ms + self.spec.request_timeout_ms) / 1000 + 5
        rng = random.Random(self.lane.seed)
        resend: list[Send] = []
        try:
            while not self.ctx.stop.is_set():
                crash = rng.random() < self.spec.crash_fraction
                micro = resend or self._fresh_micro()
                done = self._send_op(producer, process, micro, single_attempt, wait_s, crash, rng)
                self.counts.ops += 1
                unknown = [m for m in done if m.outcome == "info"]
                if crash or _op_type([m.outcome for m in done]) == "info":
                    # Jepsen's rule: an indeterminate op crashes the process; a new
                    # process with a new client session takes over.
                    abandon(producer)
                    process = self.ctx.pids.next()
                    producer = self._new_producer()
                resend = [
                    Send(m.topic, m.partition, m.value, resend=True)
                    for m in unknown
                    if self.spec.resend_unacked
                ]
                self.counts.resent += len(resend)
        finally:
            abandon(producer)

    def _fresh_micro(self) -> list[Send]:
        keyed = self.spec.keyed
        return [
            # Keyed sends leave the choice to the partitioner: null until the report.
            Send(self.topic.name, None if keyed else v % self.topic.partitions, v)
            for v in self.ctx.values.take(self.spec.batch)
        ]

    def _send_op(
        self,
        producer: Producer,
        process: int,
        micro: list[Send],
        single_attempt: bool,
        wait_s: float,
        crash: bool,
        rng: random.Random,
    ) -> list[Send]:
        keyed = self.spec.keyed
        history = self.ctx.history
        history.invoke(process, "send", micro)
        # Per value: (outcome, offset, error, partition the record went to).
        results: list[tuple[Outcome, int | None, str | None, int | None] | None]
        results = [None] * len(micro)
        pending = [len(micro)]

        def report(i: int) -> Callable[[KafkaError | None, Message], None]:
            def cb(err: KafkaError | None, msg: Message) -> None:
                part = msg.partition()
                part = part if part is not None and part >= 0 else micro[i].partition
                if err is None:
                    off = msg.offset()
                    # acks=0 gets no offset back: librdkafka reports -1 (OFFSET_INVALID).
                    offset = off if off is not None and off >= 0 else None
                    results[i] = ("ok", offset, None, part)
                else:
                    results[i] = (classify(err.code(), single_attempt), None, err.name(), part)
                pending[0] -= 1

            return cb

        for i, m in enumerate(micro):
            kwargs: dict[str, Any] = {"value": str(m.value).encode(), "on_delivery": report(i)}
            if keyed:
                kwargs["key"] = str(m.value).encode()
            if m.partition is not None:
                # A resent keyed value goes where its first send's report said.
                kwargs["partition"] = m.partition
            try:
                producer.produce(m.topic, **kwargs)
            except BufferError:
                results[i] = ("fail", None, "_QUEUE_FULL", m.partition)
                pending[0] -= 1
            except KafkaException as e:
                err = e.args[0]
                results[i] = (classify(err.code(), True), None, err.name(), m.partition)
                pending[0] -= 1
        # A crash comes somewhere inside the round trip: requests may be on the wire.
        deadline = time.monotonic() + (rng.uniform(0, 0.03) if crash else wait_s)
        fatal: str | None = None
        while pending[0] > 0 and time.monotonic() < deadline:
            try:
                producer.poll(0.005 if crash else 0.05)
            except KafkaException as e:
                # A fatal error (e.g. the idempotent producer's sequence desynchronised
                # after an unclean election) ends this client: what is unanswered is
                # unknown, and the worker goes on with a new producer.
                fatal = e.args[0].name()
                break
        if crash:
            self.counts.crashes += 1
        done: list[Send] = []
        errors: list[str] = []
        outcomes: list[Outcome] = []
        for m, r in zip(micro, results, strict=True):
            missing = "client crashed" if crash else fatal or "no delivery report"
            outcome, offset, error, part = (
                r if r is not None else ("info", None, missing, m.partition)
            )
            outcomes.append(outcome)
            if error and error not in errors:
                errors.append(error)
            done.append(m.done(outcome, offset, part))
        self.acks.record_sends(done)
        op_type = _op_type(outcomes)
        history.complete(
            op_type, process, "send", done, ",".join(errors) if op_type != "ok" else None
        )
        return done
