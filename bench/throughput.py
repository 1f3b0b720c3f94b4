"""Throughput of the recorded workload against a raw confluent-kafka producer, on
one cluster, in one run: acknowledged values per second, and the ratio.

    python bench/throughput.py [--seconds 20] [--clients 3] [--processes 32] [--batch 200]

Starts one 3-broker cluster (Toxiproxy on every link), then, one after another on
fresh topics with the same client settings (acks=all, idempotence, 5 in flight):

1. raw: `clients` producers in as many threads, each calling produce() as fast as
   its queue takes it, with poll(0) and a delivery callback that counts
   acknowledgements. Nothing is recorded.
2. recorded: kafka-trial's producer workload, unlimited rate, `clients` clients of
   `processes` logical processes with ops of `batch` values, every op recorded in a
   history on disk.
3. recorded at the defaults (the rate a default run offers), for reference.

It prints values/s for each, the ratio recorded/raw, and where the time goes: this
process's CPU seconds per 10k acknowledged values (Python: the workload and its
recorder) next to the brokers' (read from their containers' cgroups).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from kafka_trial.cluster import Cluster
from kafka_trial.cluster.naming import LABEL_RUN
from kafka_trial.cluster.settings import ClusterSpec, TopicSpec
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.workloads import ClientContext, WorkloadSession, plan_workloads
from kafka_trial.workloads.settings import ProducerSpec


@dataclass
class Measured:
    name: str
    acked: int
    seconds: float
    cpu_s: float  # this process
    broker_cpu_s: float
    history_lines: int = 0

    @property
    def rate(self) -> float:
        return self.acked / self.seconds

    def row(self) -> str:
        per = 10_000 / max(self.acked, 1)
        return (
            f"{self.name:<28} {self.rate:>10,.0f}/s  acked {self.acked:>9,}  "
            f"python CPU {self.cpu_s * per:5.2f} s/10k  "
            f"containers {self.broker_cpu_s * per:5.2f} s/10k"
            + (f"  history {self.history_lines:,} lines" if self.history_lines else "")
        )


def broker_cpu_s(cluster: Cluster) -> float:
    """CPU seconds the cluster's containers (brokers and proxies) used so far."""
    total = 0.0
    for c in cluster.client.containers.list(filters={"label": f"{LABEL_RUN}={cluster.run_id}"}):
        stats = c.stats(stream=False, one_shot=True)
        total += stats["cpu_stats"]["cpu_usage"]["total_usage"] / 1e9
    return total


def raw(cluster: Cluster, topic: TopicSpec, spec: ProducerSpec, seconds: float) -> Measured:
    """The yardstick: confluent-kafka as its documentation uses it."""
    acked = [0] * spec.clients
    stop = threading.Event()
    values = itertools.count()
    lock = threading.Lock()

    def run(k: int) -> None:
        p = Producer({"bootstrap.servers": cluster.bootstrap_for(k), **spec.client_config()})

        def cb(err: Any, msg: Any) -> None:
            if err is None:
                acked[k] += 1

        parts = topic.partitions
        while not stop.is_set():
            with lock:
                chunk = [next(values) for _ in range(1000)]
            for v in chunk:
                while True:
                    try:
                        p.produce(topic.name, str(v).encode(), partition=v % parts, on_delivery=cb)
                        break
                    except BufferError:
                        p.poll(0.01)
                p.poll(0)
        p.flush(30)

    cpu0, b0 = time.process_time(), broker_cpu_s(cluster)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(spec.clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(60)
    took = time.monotonic() - t0
    return Measured(
        "raw confluent-kafka",
        sum(acked),
        took,
        time.process_time() - cpu0,
        broker_cpu_s(cluster) - b0,
    )


def recorded(
    cluster: Cluster, topic: TopicSpec, spec: ProducerSpec, seconds: float, run_dir: Path, name: str
) -> Measured:
    history = HistoryWriter(run_dir / f"{topic.name}.jsonl")
    ctx = ClientContext(history, cluster.bootstrap_for, run_id=topic.name)
    session = WorkloadSession(plan_workloads(topic, spec), ctx)
    cpu0, b0 = time.process_time(), broker_cpu_s(cluster)
    t0 = time.monotonic()
    session.start()
    time.sleep(seconds)
    session.stop()
    took = time.monotonic() - t0
    history.close()
    return Measured(
        name,
        ctx.acks_for(topic.name).acked,
        took,
        time.process_time() - cpu0,
        broker_cpu_s(cluster) - b0,
        history.lines_written,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--processes", type=int, default=32, help="logical processes per client")
    ap.add_argument("--batch", type=int, default=200, help="values per send op")
    ap.add_argument("--kafka-version", default="4")
    a = ap.parse_args()
    unlimited = ProducerSpec(
        clients=a.clients,
        processes_per_client=a.processes,
        batch=a.batch,
        target_rate=None,
    )
    topics = [
        TopicSpec(name=n, partitions=3, replication_factor=3, min_insync_replicas=2)
        for n in ("bench-raw", "bench-recorded", "bench-default")
    ]
    rows: list[Measured] = []
    with (
        tempfile.TemporaryDirectory(prefix="kt-throughput-") as tmp,
        Cluster.running(ClusterSpec(kafka_version=a.kafka_version), topics=topics) as cluster,
    ):
        print(
            f"cluster up; {a.seconds:.0f} s per case; clients {a.clients}, acks=all, "
            f"idempotence, max.in.flight 5, linger.ms {unlimited.linger_ms}",
            flush=True,
        )
        rows.append(raw(cluster, topics[0], unlimited, a.seconds))
        print(rows[-1].row(), flush=True)
        rows.append(
            recorded(
                cluster,
                topics[1],
                unlimited,
                a.seconds,
                Path(tmp),
                f"recorded, {a.processes}x{a.batch}/client",
            )
        )
        print(rows[-1].row(), flush=True)
        rows.append(
            recorded(cluster, topics[2], ProducerSpec(), a.seconds, Path(tmp), "recorded, defaults")
        )
        print(rows[-1].row(), flush=True)
    ratio = rows[1].rate / rows[0].rate
    print(f"\nratio recorded/raw: {ratio:.2f} (goal: at least 0.5)")
    print(
        f"default run: {rows[2].rate:,.0f} values/s acknowledged "
        f"(target_rate {ProducerSpec().target_rate}/s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
