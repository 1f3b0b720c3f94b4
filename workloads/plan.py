"""The workloads of a run, built from the stage settings: producers (plain or
transactional), consumers (assign or a group), exactly-once copiers, and the
application on trial (app.py).

Adding a workload means a class here (or beside it) and a line in `plan_workloads`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.workloads.app import AppPlacement, AppWorkload
from kafka_trial.workloads.base import ClientContext, Lane, Worker, Workload
from kafka_trial.workloads.consumer import PollWorker
from kafka_trial.workloads.copier import CopierWorker, copier_stop_s
from kafka_trial.workloads.group_consumer import GroupWorker, record_group_offsets
from kafka_trial.workloads.producer import ProducerWorker
from kafka_trial.workloads.settings import AppSpec, ConsumerSpec, CopierSpec, ProducerSpec
from kafka_trial.workloads.transactions import TxnWorker


@dataclass(frozen=True)
class ProducerWorkload:
    spec: ProducerSpec
    topic: TopicSpec
    isolation_level: str = "read_committed"  # of a transaction's own reads (txn_poll)
    name: str = "producer"

    def join_s(self) -> float:
        # librdkafka reports every send within delivery.timeout.ms (plus the request).
        return (self.spec.delivery_timeout_ms + self.spec.request_timeout_ms) / 1000 + 10

    def topics(self) -> tuple[TopicSpec, ...]:
        return (self.topic,)

    def workers(self, ctx: ClientContext, lanes: Callable[[], Lane]) -> list[Worker]:
        out: list[Worker] = []
        for i in range(self.spec.clients):
            if self.spec.transactional:
                tid = f"kt-{ctx.run_id}-{i}"
                out.append(
                    TxnWorker(ctx, lanes(), self.spec, self.topic, tid, self.isolation_level)
                )
            else:
                out.append(ProducerWorker(ctx, lanes(), self.spec, self.topic))
        return out

    def finish(self, ctx: ClientContext) -> None:
        return None


@dataclass(frozen=True)
class ConsumerWorkload:
    spec: ConsumerSpec
    topic: TopicSpec
    name: str = "consumer"

    def group_id(self, ctx: ClientContext) -> str:
        return f"kafka-trial-group-{ctx.run_id}"

    def join_s(self) -> float:
        # A poll waits 0.5 s; a stall (on purpose) does not watch the stop event.
        return 10 + (self.spec.stall_s if self.spec.stall_fraction else 0)

    def topics(self) -> tuple[TopicSpec, ...]:
        return ()

    def workers(self, ctx: ClientContext, lanes: Callable[[], Lane]) -> list[Worker]:
        if self.spec.mode == "subscribe":
            group = self.group_id(ctx)
            return [
                GroupWorker(ctx, lanes(), self.spec, self.topic, group)
                for _ in range(self.spec.workers)
            ]
        return [PollWorker(ctx, lanes(), self.spec, self.topic) for _ in range(self.spec.workers)]

    def finish(self, ctx: ClientContext) -> None:
        if self.spec.mode == "subscribe" and self.spec.workers:
            record_group_offsets(ctx, self.topic, self.group_id(ctx), self.spec, role="consumer")


@dataclass(frozen=True)
class CopierWorkload:
    """Copies `source` to `source-out`, exactly once; its group offsets say what it
    committed past, and the drain of the output topic what it wrote."""

    spec: CopierSpec
    source: TopicSpec
    name: str = "copier"

    @property
    def sink(self) -> TopicSpec:
        return self.source.model_copy(update={"name": f"{self.source.name}-out"})

    def group_id(self, ctx: ClientContext) -> str:
        return f"kafka-trial-copier-{ctx.run_id}"

    def join_s(self) -> float:
        return copier_stop_s()

    def topics(self) -> tuple[TopicSpec, ...]:
        return (self.sink,)

    def workers(self, ctx: ClientContext, lanes: Callable[[], Lane]) -> list[Worker]:
        group, sink = self.group_id(ctx), self.sink
        return [
            CopierWorker(
                ctx, lanes(), self.spec, self.source, sink, group, f"kt-{ctx.run_id}-copier-{i}"
            )
            for i in range(self.spec.workers)
        ]

    def finish(self, ctx: ClientContext) -> None:
        # The copier group reads read_committed, whatever the run's consumers do.
        record_group_offsets(ctx, self.source, self.group_id(ctx), ConsumerSpec(), role="copier")


def plan_workloads(
    topic: TopicSpec,
    producer: ProducerSpec,
    consumer: ConsumerSpec | None = None,
    copier: CopierSpec | None = None,
    app: AppSpec | None = None,
    placement: AppPlacement | None = None,
) -> list[Workload]:
    """Producers, then consumers, then copiers, then the application on trial: the
    order lanes are handed out in. `placement`: the cluster's lanes and network, as
    the app's instances need them."""
    if app is not None and app.present and not producer.partition_keys and not producer.keyed:
        # A spec built without RunSpec (a user's script): an app's run keys by partition.
        producer = producer.model_copy(update={"partition_keys": True})
    out: list[Workload] = [
        ProducerWorkload(producer, topic, (consumer or ConsumerSpec()).isolation_level)
    ]
    if consumer is not None and consumer.workers:
        out.append(ConsumerWorkload(consumer, topic))
    if copier is not None and copier.workers:
        out.append(CopierWorkload(copier, topic))
    if app is not None and app.present:
        out.append(AppWorkload(app, topic, placement))
    return out
