"""Workload plumbing: lanes, the session, and the history format of typed micro-ops.

Clients run against librdkafka's in-process mock cluster (plumbing only, never a
stand-in for Kafka's behaviour under faults)."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.contracts.ops import (
    Commit,
    GroupOffsets,
    MemberEvent,
    Poll,
    Processed,
    Rebalance,
    Record,
    Send,
    TopicOffset,
    encode,
)
from kafka_trial.workloads.base import ClientContext, Lane
from kafka_trial.workloads.plan import CopierWorkload, plan_workloads
from kafka_trial.workloads.session import WorkloadSession
from kafka_trial.workloads.settings import ConsumerSpec, CopierSpec, ProducerSpec

MOCK = {"test.mock.num.brokers": 3}


def as_json(micro: object) -> dict:
    return json.loads(json.dumps(micro, default=encode))


def test_typed_micro_ops_write_the_documented_format() -> None:
    """docs/history.md is a public contract: each shape, key for key."""
    s = Send("t", 1, 7)
    assert as_json(s) == {"op": "send", "topic": "t", "partition": 1, "value": 7}
    assert as_json(s.done("ok", 42, 1)) == {
        "op": "send",
        "topic": "t",
        "partition": 1,
        "value": 7,
        "offset": 42,
        "outcome": "ok",
    }
    assert as_json(s.done("info", None, 1))["offset"] is None
    assert as_json(Send("t", None, 7, resend=True))["resend"] is True
    assert as_json(Poll()) == {"op": "poll"}
    assert as_json(Poll(role="drain")) == {"op": "poll", "role": "drain"}
    rec = Record("t", 0, 3, 9)
    assert as_json(Poll((rec,), "drain", (TopicOffset("t", 0, 4),))) == {
        "op": "poll",
        "role": "drain",
        "records": [{"topic": "t", "partition": 0, "offset": 3, "value": 9}],
        "at_end": [{"topic": "t", "partition": 0, "offset": 4}],
    }
    assert as_json(Processed((rec,)))["op"] == "process"
    assert as_json(Commit((TopicOffset("t", 0, 4),))) == {
        "op": "commit",
        "offsets": [{"topic": "t", "partition": 0, "offset": 4}],
    }
    assert as_json(GroupOffsets("copier", "g")) == {
        "op": "group-offsets",
        "role": "copier",
        "group": "g",
    }
    assert as_json(Rebalance("revoke", (0, 2))) == {"op": "revoke", "partitions": [0, 2]}
    assert as_json(MemberEvent("crash", point="before-commit")) == {
        "op": "crash",
        "point": "before-commit",
    }
    assert as_json(MemberEvent("stall", ms=9000)) == {"op": "stall", "ms": 9000}


def test_lanes_are_numbered_across_workloads_in_order(tmp_path: Path) -> None:
    topic = TopicSpec(name="mock")
    ctx = ClientContext(HistoryWriter(tmp_path / "h.jsonl"), lambda k: f"lane-{k}", seed=4)
    session = WorkloadSession(
        plan_workloads(
            topic, ProducerSpec(workers=2), ConsumerSpec(workers=1), CopierSpec(workers=1)
        ),
        ctx,
    )
    numbers = itertools.count()
    lanes = [
        (w.name, worker.lane)
        for w in session.workloads
        for worker in w.workers(ctx, lambda: Lane.of(ctx, next(numbers)))
    ]
    # Producers, then the consumer, then the copier; seeds derive from the run's seed.
    assert [(name, lane.index, lane.bootstrap, lane.seed) for name, lane in lanes] == [
        ("producer", 0, "lane-0", 4000),
        ("producer", 1, "lane-1", 4001),
        ("consumer", 2, "lane-2", 4002),
        ("copier", 3, "lane-3", 4003),
    ]
    assert [t.name for t in session.topics()] == ["mock", "mock-out"]
    assert CopierWorkload(CopierSpec(workers=1), topic).sink.name == "mock-out"


def test_a_session_runs_workers_and_sums_what_they_did(tmp_path: Path) -> None:
    topic = TopicSpec(name="mock")
    history = HistoryWriter(tmp_path / "h.jsonl")
    ctx = ClientContext(history, lambda _k: "", extra_config=MOCK)
    session = WorkloadSession(
        plan_workloads(topic, ProducerSpec(clients=2, batch=5), ConsumerSpec(workers=1)), ctx
    )
    session.start()
    time.sleep(1.5)
    session.stop(30)
    assert not any(th.is_alive() for th in session.threads)
    history.close()
    ops = read_history(history.path).ops
    sends = [o for o in ops if o.f == "send" and o.type == "ok"]
    polls = [o for o in ops if o.f == "poll" and o.type == "ok"]
    assert sends and polls
    assert session.counts("producer").ops == len(
        [o for o in ops if o.f == "send" and o.type != "invoke"]
    )
    assert ctx.acks_for("mock").acked == sum(len(o.value) for o in sends)
    # Two clients, each serving its processes (none replaced: every op was ok).
    assert len({o.process for o in sends}) <= 2 * ProducerSpec().processes()
    assert {m["client"] for o in sends for m in o.value} == {0, 1}
    assert session.events() == {"crashes": 0, "resent": 0, "leaves": 0, "stalls": 0}
    # Every invoke has its completion: nothing left open by stopping.
    assert history.open_processes() == {}


def test_micro_op_schema_covers_every_key_a_micro_op_writes() -> None:
    """The Spark schema is derived from contracts/ops.py; a key a recorder writes but
    the schema lacks would be dropped silently."""
    from kafka_trial.spark_analysis.read.history_parse import MICRO_OPS

    rec, off = Record("t", 0, 1, 2), TopicOffset("t", 0, 3)
    samples = [
        Send("t", 0, 1, resend=True).done("ok", 5, 0),
        Poll((rec,), "drain", (off,)),
        Processed((rec,)),
        Commit((off,)),
        GroupOffsets("consumer", "g", (off,)),
        Rebalance("assign", (0,)),
        MemberEvent("crash", point="x"),
        MemberEvent("stall", ms=1),
    ]
    fields = {f.name: f.dataType for f in MICRO_OPS.elementType.fields}
    for m in samples:
        for key, value in as_json(m).items():
            assert key in fields, (type(m).__name__, key)
            if isinstance(value, list) and value and isinstance(value[0], dict):
                inner = {f.name for f in fields[key].elementType.fields}
                assert set(value[0]) <= inner, (key, value[0])
