"""What the storage and clock faults' machinery costs in broker throughput, each
against its yardstick in the same run: acknowledged values per second and the ratio.

    python bench/storage_bench.py [--seconds 10] [--rounds 3] [--clients 3]

Three 3-broker clusters, one after another, each measured with the same raw
confluent-kafka producers (acks=all, idempotence, 5 in flight, 100-byte values; no
history), in rounds that alternate the two sides so that the machine's drift falls
on both:

1. plain storage, real clock: the yardstick of every ratio;
2. kt-lazyfs under the data directory (`cluster.storage: writeback`): a topic with
   Kafka's default flush (never) against one with `flush.messages=1`, in the same
   cluster, so the flush's own cost is one ratio (claim C14's twin) and the
   filesystem's cost is the other (default flush, against 1.);
3. libfaketime in the brokers' JVMs (`cluster.clock: faketime`) at offset 0: the
   preload's cost, against 1.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from confluent_kafka import Producer
from kafka_trial.cluster import Cluster
from kafka_trial.cluster.settings import ClusterSpec, TopicSpec

VALUE = b"x" * 100


def produce(bootstrap: str, topic: str, seconds: float, clients: int) -> float:
    """Acknowledged values per second of `clients` producers writing as fast as
    their queues take it, for `seconds`."""
    acked = [0] * clients

    def one(i: int) -> None:
        def done(err: object, _msg: object) -> None:
            if err is None:
                acked[i] += 1

        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "queue.buffering.max.messages": 200_000,
            }
        )
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                p.produce(topic, VALUE, on_delivery=done)
            except BufferError:
                p.poll(0.01)
            p.poll(0)
        p.flush(30)

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(acked) / (time.monotonic() - t0)


def rounds(c: Cluster, topics: list[str], args: argparse.Namespace) -> dict[str, list[float]]:
    got: dict[str, list[float]] = {t: [] for t in topics}
    produce(c.bootstrap, topics[0], 3, args.clients)  # warm-up: connections, JIT
    for r in range(args.rounds):
        order = topics if r % 2 == 0 else list(reversed(topics))
        for t in order:
            got[t].append(produce(c.bootstrap, t, args.seconds, args.clients))
    return got


def topic(name: str, **kw: object) -> TopicSpec:
    return TopicSpec(name=name, partitions=3, replication_factor=3, min_insync_replicas=2, **kw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", type=int, default=3)
    args = ap.parse_args()
    med: dict[str, float] = {}
    plans = [
        (ClusterSpec(), [topic("plain")]),
        (
            ClusterSpec(storage="writeback"),
            [topic("writeback"), topic("writeback-flush1", flush_messages=1)],
        ),
        (ClusterSpec(clock="faketime"), [topic("faketime")]),
    ]
    for spec, topics in plans:
        with Cluster.running(spec, topics) as c:
            got = rounds(c, [t.name for t in topics], args)
        for t, rates in got.items():
            med[t] = statistics.median(rates)
            print(
                f"{t:<18} median {med[t]:>9,.0f}/s  rounds " + ", ".join(f"{x:,.0f}" for x in rates)
            )
    print()
    for what, num, den in (
        ("kt-lazyfs / plain (default flush)", "writeback", "plain"),
        ("flush.messages=1 / default, both kt-lazyfs", "writeback-flush1", "writeback"),
        ("libfaketime / real clock", "faketime", "plain"),
    ):
        print(f"{what:<44} {med[num] / med[den]:.2f}")


if __name__ == "__main__":
    main()
