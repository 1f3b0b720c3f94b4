"""fenced-write on real brokers: a session whose transactional.id `fence-txn-id` took
over begins a transaction after the takeover completed, and nothing of it commits.
The client ops are recorded beside the nemesis's, with the client id the hijacker's
completion names, and the history is judged by the Spark check and the reference."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from kafka_trial.cluster.facade import Cluster
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.contracts.transactional_ids import TXN_IDS
from kafka_trial.nemesis.hijack import HijackTxn
from kafka_trial.spark_analysis.job import analyze
from kafka_trial.workloads.app_catch_up import _looker
from kafka_trial.workloads.base import ClientContext
from kafka_trial.workloads.drain import drain
from kafka_trial.workloads.settings import DrainSpec

from tests import reference_checker as ref
from tests.integration.conftest import bind

TOPIC = "trial"
CLIENT = 1  # the session's client id, as a worker would name it


def _txn(h: HistoryWriter, producer: Producer, process: int, value: int, seq: int) -> str:
    """One transaction of one value, recorded as the transactional worker records it;
    its outcome."""
    micro = {"op": "send", "topic": TOPIC, "partition": 0, "value": value}
    micro |= {"client": CLIENT, "seq": seq}
    h.invoke(process, "txn", [micro])
    offset: list[int] = []

    def report(err: Any, msg: Any) -> None:
        # As the workers' report: a failed delivery's message is not to be asked.
        if err is None and msg.offset() is not None:
            offset.append(msg.offset())

    outcome, error = "info", None
    try:
        producer.begin_transaction()
        producer.produce(TOPIC, str(value).encode(), partition=0, on_delivery=report)
        producer.flush(30)
        producer.commit_transaction(30)
        outcome = "ok"
    except KafkaException as e:
        err = e.args[0]
        error = err.name()
        if err.txn_requires_abort():
            try:
                producer.abort_transaction(30)
                outcome = "fail"
            except KafkaException:
                pass
    done = {**micro, "offset": offset[0] if offset and offset[0] >= 0 else None}
    h.complete(outcome, process, "txn", [{**done, "outcome": outcome}], error)
    return outcome


def _drain(cluster: Cluster, h: HistoryWriter, ours: set[int]) -> set[int]:
    """Partition 0, read_committed, to its end; recorded as the final drain's poll (its
    records of this test's values: the topic is shared with other tests)."""
    reader = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"kt-{cluster.run_id}-fenced-reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    tp = TopicPartition(TOPIC, 0)
    end = reader.get_watermark_offsets(tp, timeout=10)[1]
    reader.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    records: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    micro = {"op": "poll", "role": "drain"}
    h.invoke(99, "poll", [micro])
    while time.monotonic() < deadline:
        for m in reader.consume(500, timeout=0.5):
            v = m.value()
            if m.error() is None and v is not None and v.isdigit() and int(v) in ours:
                records.append(
                    {"topic": TOPIC, "partition": 0, "offset": m.offset(), "value": int(v)}
                )
        if reader.position([tp])[0].offset >= end:
            break
    reader.close()
    h.complete("ok", 99, "poll", [{**micro, "records": records}])
    return {r["value"] for r in records}


def test_a_hijack_fences_the_session_so_nothing_it_begins_after_commits(
    cluster: Cluster, rec, tmp_path: Path, spark
) -> None:
    tid = f"kt-{cluster.run_id}-fenced"
    base = int(time.time() * 1000) % 10**9 * 10  # this test's values, apart from others'
    before, after = base + 1, base + 2
    h = rec.history
    live = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid})
    live.init_transactions(60)
    assert _txn(h, live, 0, before, 0) == "ok"
    # As a worker does once its init_transactions returned: the session holds the id.
    TXN_IDS.register(tid, "producer", {"bootstrap.servers": cluster.bootstrap})
    TXN_IDS.session(tid, CLIENT)
    try:
        bind(HijackTxn(name="fence-txn-id"), cluster, rec).fault(pick=0)
    finally:
        TXN_IDS.unregister(tid)
    ops = read_history(h.path).ops
    done = [o for o in ops if o.process == "nemesis" and o.type != "invoke"][-1]
    assert (done.f, done.type) == ("hijack-txn", "ok"), done
    assert done.value["client"] == CLIENT and done.value["transactional_id"] == tid
    # Begun after the takeover completed: the coordinator must refuse it.
    assert _txn(h, live, 0, after, 1) != "ok"
    del live  # fenced, it cannot close (close() aborts, which is refused): dropped
    seen = _drain(cluster, h, {before, after})
    assert before in seen and after not in seen
    h.flush()
    lines = [json.loads(x) for x in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert ref.fenced_write(lines) == set()
    res = analyze(tmp_path / "history.jsonl")
    assert res.anomalies["fenced-write"].count == 0, res.anomalies["fenced-write"]


def test_the_drain_reads_past_an_open_transaction_only_once_it_ends(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A transaction left open (a zombie's) holds the read_committed end below the high
    watermark, and a record committed after it waits behind it. The drain must record
    that hold and not an end, and read on once the transaction ends; before the fix it
    took the hold for the end, and the history proved the record behind it absent.
    The app's catch-up wait reads the same end, and must not call it "nothing left"."""
    topic = TopicSpec(name=f"held-{cluster.run_id}", partitions=1, replication_factor=3)
    cluster.create_topic(topic)
    zombie = Producer(
        {"bootstrap.servers": cluster.bootstrap, "transactional.id": f"kt-{cluster.run_id}-held"}
    )
    zombie.init_transactions(60)
    zombie.begin_transaction()
    zombie.produce(topic.name, b"1", partition=0)
    zombie.flush(30)
    plain = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    plain.produce(topic.name, b"2", partition=0)
    assert plain.flush(30) == 0
    ctx = ClientContext(HistoryWriter(tmp_path / "h.jsonl"), cluster.bootstrap_for)
    held = drain(ctx, topic, DrainSpec(timeout_s=6, settle_s=1))
    assert not held.complete and held.records == 0
    ctx.history.flush()
    marks = _end_marks(tmp_path / "h.jsonl")
    assert marks and all(k == "held" for k, _ in marks), marks
    assert all(o == 2 for _, o in marks), marks  # the high watermark: both records
    # Nor is the app's catch-up fooled: 2 is left to read behind the open transaction.
    looker = _looker(ctx, topic, topic, f"kt-{cluster.run_id}-held-app")
    assert looker.nothing_left({0: 0}, {0: 2}) is False
    # Aborted (as a transaction timeout would): the end is now the high watermark.
    threading.Timer(2.0, zombie.abort_transaction, args=(30,)).start()
    done = drain(ctx, topic, DrainSpec(timeout_s=60, settle_s=1))
    assert done.complete and done.records == 1  # 2 only: 1 was aborted
    ctx.history.flush()
    marks = _end_marks(tmp_path / "h.jsonl")
    assert marks[-1][0] == "end", marks
    # Only the abort marker lies past 2 now: nothing is left for the app to read.
    assert looker.nothing_left({0: 2}, {0: 1}) is True
    looker.group.close()
    looker.reader.close()
    del zombie, plain  # their clients, before the module's cluster goes


def _end_marks(path: Path) -> list[tuple[str, int | None]]:
    """(kind, offset) of each end and hold the drain polls recorded, in order."""
    out: list[tuple[str, int | None]] = []
    for op in read_history(path).ops:
        if op.f == "poll" and op.type == "ok":
            for m in op.value:
                out += [("end", e["offset"]) for e in m.get("at_end") or []]
                out += [("held", e["offset"]) for e in m.get("held") or []]
    return out
