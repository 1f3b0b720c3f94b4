"""Benchmark: for each fault kind on the 3-node cluster, the time from fault to a new
leader of the target partition, and from heal to every partition fully in sync.

    python bench/fault_timings.py [--repeats 2]

Leadership is read from cluster metadata every 0.2 s, so times carry about 0.2 s of
sampling error. A background producer writes to every partition throughout.
Broker timeouts are the harness defaults (spec.DEFAULT_BROKER_CONFIG).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer
from kafka_trial.cluster.engine import ensure_engine
from kafka_trial.cluster.facade import Cluster
from kafka_trial.cluster.images import ensure_images
from kafka_trial.cluster.toxiproxy import Toxic
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.harness.spec import RunSpec
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.packages import Degrade, PartitionFault, ProcessFault
from kafka_trial.nemesis.steps import Package

SPEC = RunSpec()
TOPIC = SPEC.topic.name


def _until(cond, timeout_s: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if cond():
            return time.monotonic() - t0
        time.sleep(0.2)
    return None


def _write(bootstrap: str, stop: threading.Event) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20})
    while not stop.is_set():
        for part in range(SPEC.topic.partitions):
            try:
                p.produce(TOPIC, b"x", partition=part)
            except BufferError:
                p.poll(0.5)
        p.poll(0.05)
    p.flush(5)


def packages() -> dict[str, Package]:
    p = {k: ProcessFault(k, TOPIC, 0, ("leader",)) for k in ("kill", "stop", "pause", "bounce")}
    p["partition isolate-leader (drop)"] = PartitionFault(TOPIC, 0, ("isolate-leader",), "drop")
    p["partition isolate-leader (reject)"] = PartitionFault(TOPIC, 0, ("isolate-leader",), "reject")
    p["slow-follower (20 s latency)"] = Degrade(
        TOPIC,
        0,
        Toxic("kt-latency", "latency", "upstream", {"latency": 20000}),
        "follower-replication",
        ("random",),
    )
    return p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--hold", type=float, default=15.0, help="seconds a fault stays on")
    a = ap.parse_args()
    client = ensure_engine()
    cluster = Cluster(client, SPEC.cluster, ensure_images(client, SPEC.cluster))
    rows: list[tuple[str, list[float | None], list[float | None]]] = []
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as tmp:
        nem = Nemesis(cluster, HistoryWriter(Path(tmp) / "history.jsonl"))
        try:
            cluster.start()
            cluster.await_registered(180)
            cluster.create_topic(SPEC.topic)
            assert cluster.await_in_sync(TOPIC, 120)
            # Steady writes: a follower only lags (and leaves the ISR) when there is
            # something to fetch.
            writer = threading.Thread(target=_write, args=(cluster.bootstrap, stop), daemon=True)
            writer.start()
            for name, pkg in packages().items():
                to_leader: list[float | None] = []
                to_sync: list[float | None] = []
                for _ in range(a.repeats):
                    old = cluster.leader_of(TOPIC, 0)
                    t0 = time.monotonic()
                    nem.apply(pkg, pick=0)
                    if name.startswith("slow-follower"):
                        st = cluster.partitions(TOPIC)[0]
                        to_leader.append(
                            _until(
                                lambda st=st: (
                                    len(cluster.partitions(TOPIC)[0].isr) < len(st.replicas)
                                ),
                                a.hold * 4,
                            )
                        )
                    else:
                        to_leader.append(
                            _until(
                                lambda old=old: cluster.leader_of(TOPIC, 0) not in (old, None),
                                a.hold,
                            )
                        )
                    time.sleep(max(0.0, a.hold - (time.monotonic() - t0)))
                    nem.heal()
                    to_sync.append(_until(lambda: cluster.in_sync(TOPIC), 180))
                    cluster.await_in_sync(TOPIC, 180)
                rows.append((name, to_leader, to_sync))
        finally:
            stop.set()
            cluster.heal_all()
            cluster.teardown()

    def fmt(xs: list[float | None]) -> str:
        got = [x for x in xs if x is not None]
        miss = len(xs) - len(got)
        s = f"{statistics.median(got):6.1f}" if got else "     -"
        return s + (f" ({miss} none)" if miss else "")

    print(
        f"{'fault (on the leader of partition 0)':<38}{'fault->new leader s':>22}"
        f"{'heal->in sync s':>18}"
    )
    for name, lead, sync in rows:
        print(f"{name:<38}{fmt(lead):>22}{fmt(sync):>18}")
    print(
        "(slow-follower: the first column is fault->ISR shrink; median of "
        f"{a.repeats} runs, hold {a.hold:.0f}s)"
    )


if __name__ == "__main__":
    main()
