"""Producer clients: each librdkafka client serves several logical processes.

A process (a history `process`) has at most one send op outstanding: its invoke
comes before its first produce() and its one completion after its last delivery
report. A client serves `processes_per_client` processes at once, so its requests
are batched and pipelined as in production, and linger.ms, batch.size and
max.in.flight come into play. Every send records its client and its place in that
client's produce() order (`client`, `seq`): what the client was asked to keep in
order, whichever process asked.

A process whose op ended `info` continues under a new process id (Jepsen's rule:
that op may still take effect). A client crash (`crash_fraction`: sends in flight)
or a fatal error ends every op of the client as `info` and a new client, with new
processes, takes over. With `resend_unacked`, values left unknown are sent again
first, as an application that keeps its own outbox would: idempotence is per
producer session, so this can duplicate (claim C9). Those micro-ops carry
`"resend": true`.
"""

from __future__ import annotations

import functools
import itertools
import random
import time
from collections import deque
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.ops import Send
from kafka_trial.workloads.base import AckTracker, ClientContext, Counters, Lane
from kafka_trial.workloads.clients import abandon
from kafka_trial.workloads.outcomes import Outcome, classify
from kafka_trial.workloads.pacing import Pacer
from kafka_trial.workloads.settings import ProducerSpec

# librdkafka's client.id of producer client C is this plus C (docs/history.md).
CLIENT_ID_PREFIX = "kt-producer-"

# (outcome, offset, error, partition the record went to) of one send.
Result = tuple[Outcome, int | None, str | None, int | None]


def _op_type(outcomes: list[Outcome]) -> Outcome:
    if all(o == "ok" for o in outcomes):
        return "ok"
    if all(o == "fail" for o in outcomes):
        return "fail"
    return "info"


@dataclass(eq=False)
class _SendOp:
    """One process's outstanding op: filled in by delivery reports."""

    process: int
    micro: list[Send]
    deadline: float
    results: list[Result | None] = field(default_factory=list)
    pending: int = 0
    closed: bool = False  # completed in the history; later reports are ignored


@dataclass
class _Client:
    producer: Producer
    id: int
    seq: itertools.count[int] = field(default_factory=itertools.count)


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

    def _new_client(self) -> _Client:
        cid = self.ctx.client_ids.next()
        # The history's `client` in librdkafka's own name, so that a debug log
        # (producer.librdkafka.debug) can be read against the history's sends.
        named = {"client.id": f"{CLIENT_ID_PREFIX}{cid}", **self.spec.client_config()}
        return _Client(Producer(self.ctx.client_config(self.lane, **named)), cid)

    def run(self) -> None:
        spec = self.spec
        rate = spec.target_rate / spec.clients if spec.target_rate else None
        pacer = Pacer(rate)
        rng = random.Random(self.lane.seed)
        # librdkafka reports every message within delivery.timeout.ms; beyond that, unknown.
        self._wait_s = (spec.delivery_timeout_ms + spec.request_timeout_ms) / 1000 + 5
        self._single_attempt = spec.retries == 0
        self._done: deque[_SendOp] = deque()
        self._resend: deque[list[Send]] = deque()
        client = self._new_client()
        idle = [self.ctx.pids.next() for _ in range(spec.processes())]
        inflight: list[_SendOp] = []
        crash_at: float | None = None
        # A crash ends every op of the client: about `processes` ops at once. Per op
        # started, the chance is divided by that, so that crash_fraction stays the
        # fraction of ops a crash ends, as it was with one process per client.
        crash_chance = spec.crash_fraction / spec.processes()
        next_sweep = 0.0  # when ops past their deadline are looked for next
        try:
            while True:
                stopping = self.ctx.stop.is_set()
                if not stopping and crash_at is None:
                    crash_at = self._start_idle(client, idle, inflight, pacer, rng, crash_chance)
                if not inflight:
                    if stopping:
                        return
                    self.ctx.stop.wait(min(0.05, pacer.wait_s(spec.batch)))
                    continue
                fatal: str | None = None
                # Wake up for the next delivery report, the next op the rate allows,
                # or the crash, whichever comes first.
                wait = 0.05
                if crash_at is not None:
                    wait = 0.002
                elif idle:
                    wait = min(wait, max(0.001, pacer.wait_s(spec.batch)))
                try:
                    client.producer.poll(wait)
                except KafkaException as e:
                    # A fatal error (e.g. the idempotent producer's sequence
                    # desynchronised after an unclean election) ends this client.
                    fatal = e.args[0].name()
                self._complete_reported(inflight, idle)
                now = time.monotonic()
                ended = fatal or ("client crashed" if crash_at and now >= crash_at else None)
                if ended:
                    if crash_at is not None:
                        self.counts.crashes += 1
                    for op in inflight:
                        self._complete(op, ended)
                    abandon(client.producer)
                    client = self._new_client()
                    # A new session: none of the old processes goes on.
                    idle = [self.ctx.pids.next() for _ in range(spec.processes())]
                    inflight, crash_at = [], None
                    continue
                if now >= next_sweep:
                    next_sweep = now + 0.1
                    for op in [o for o in inflight if now >= o.deadline]:
                        inflight.remove(op)
                        idle.append(self._complete(op, "no delivery report"))
        finally:
            for op in inflight:
                self._complete(op, "worker stopped")
            abandon(client.producer)

    def _start_idle(
        self,
        client: _Client,
        idle: list[int],
        inflight: list[_SendOp],
        pacer: Pacer,
        rng: random.Random,
        crash_chance: float,
    ) -> float | None:
        """Start an op on each idle process the rate allows, resends first. Returns
        the time the client is to crash if one of those ops drew a crash, else None."""
        while idle:
            micro = self._resend[0] if self._resend else None
            if not pacer.take(len(micro) if micro else self.spec.batch):
                return None
            if micro is not None:
                self._resend.popleft()
            inflight.append(self._start(client, idle.pop(), micro))
            if rng.random() < crash_chance:
                # The crash comes somewhere inside the round trip.
                return time.monotonic() + rng.uniform(0, 0.03)
        return None

    def _complete_reported(self, inflight: list[_SendOp], idle: list[int]) -> None:
        """Complete the ops every send of which has its delivery report; their
        processes (or their successors) go idle."""
        while self._done:
            op = self._done.popleft()
            if not op.closed:
                inflight.remove(op)
                idle.append(self._complete(op, None))

    def _start(self, client: _Client, process: int, resend: list[Send] | None) -> _SendOp:
        """Invoke an op of fresh values (or of `resend`), then produce its values."""
        topic, parts, keyed, seq = (
            self.topic.name,
            self.topic.partitions,
            self.spec.keyed,
            client.seq,
        )
        if resend is None:
            micro = [
                # Keyed sends leave the choice to the partitioner: null until the report.
                Send(topic, None if keyed else v % parts, v, client=client.id, seq=next(seq))
                for v in self.ctx.values.take(self.spec.batch)
            ]
        else:
            micro = [
                Send(m.topic, m.partition, m.value, resend=True, client=client.id, seq=next(seq))
                for m in resend
            ]
        op = _SendOp(process, micro, time.monotonic() + self._wait_s, [None] * len(micro))
        self.ctx.history.invoke(process, "send", micro)
        op.pending = len(micro)
        produce = client.producer.produce
        by_partition = self.spec.partition_keys
        for i, m in enumerate(micro):
            raw = str(m.value).encode()
            try:
                produce(
                    m.topic,
                    value=raw,
                    # An app on trial keeps keys: its per-key order is then per input
                    # partition, which the history can judge.
                    key=raw if keyed else str(m.partition).encode() if by_partition else None,
                    # -1: the partitioner's choice. A resent keyed value goes where its
                    # first send's report said.
                    partition=-1 if m.partition is None else m.partition,
                    on_delivery=functools.partial(self._report, op, i),
                )
            except BufferError:
                self._settle(op, i, ("fail", None, "_QUEUE_FULL", m.partition))
            except KafkaException as e:
                err = e.args[0]
                self._settle(op, i, (classify(err.code(), True), None, err.name(), m.partition))
        return op

    def _report(self, op: _SendOp, i: int, err: KafkaError | None, msg: Message) -> None:
        part = msg.partition()
        part = part if part is not None and part >= 0 else op.micro[i].partition
        if err is None:
            off = msg.offset()
            # acks=0 gets no offset back: librdkafka reports -1 (OFFSET_INVALID).
            self._settle(op, i, ("ok", off if off is not None and off >= 0 else None, None, part))
        else:
            outcome = classify(err.code(), self._single_attempt)
            self._settle(op, i, (outcome, None, err.name(), part))

    def _settle(self, op: _SendOp, i: int, result: Result) -> None:
        if op.closed or op.results[i] is not None:
            return
        op.results[i] = result
        op.pending -= 1
        if op.pending == 0:
            self._done.append(op)

    def _complete(self, op: _SendOp, missing: str | None) -> int:
        """Record the op's completion; the process that goes on (a new one after an
        unknown outcome). `missing` is why a send without a report is unknown."""
        op.closed = True
        done: list[Send] = []
        errors: list[str] = []
        outcomes: list[Outcome] = []
        for m, r in zip(op.micro, op.results, strict=True):
            outcome, offset, error, part = (
                r if r is not None else ("info", None, missing or "no delivery report", m.partition)
            )
            outcomes.append(outcome)
            if error and error not in errors:
                errors.append(error)
            done.append(m.done(outcome, offset, part))
        self.acks.record_sends(done)
        op_type = _op_type(outcomes)
        self.ctx.history.complete(
            op_type, op.process, "send", done, ",".join(errors) if op_type != "ok" else None
        )
        self.counts.ops += 1
        if op_type != "info":
            return op.process
        if self.spec.resend_unacked:
            unknown = [m for m in done if m.outcome == "info"]
            self._resend.append(unknown)
            self.counts.resent += len(unknown)
        return self.ctx.pids.next()
