"""What the history holds, counted: results.json's `stats`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_trial.nemesis.catalog import is_fault
from kafka_trial.spark_analysis.read.history_frames import Frames
from pyspark.sql import functions as F

# What the workload did to itself, shown next to what the nemesis did.
CLIENT_EVENTS = ("crash", "leave", "join", "stall", "assign", "revoke", "lost")


def stats(fr: Frames) -> dict[str, Any]:
    # One job over the ops answers every count by process kind, type and f.
    rows = (
        fr.ops.groupBy((F.col("process") == "nemesis").alias("nemesis"), "type", "f")
        .agg(F.count("*").alias("n"), F.min("time").alias("t0"), F.max("time").alias("t1"))
        .collect()
    )
    by_type: dict[str, int] = {}
    nemesis_done: dict[str, int] = {}
    events: dict[str, int] = {}
    client_ops = nemesis_ops = 0
    for r in rows:
        by_type[r["type"]] = by_type.get(r["type"], 0) + r["n"]
        if not r["nemesis"]:
            client_ops += r["n"]
            if r["type"] == "ok" and r["f"] in CLIENT_EVENTS:
                events[r["f"]] = events.get(r["f"], 0) + r["n"]
        elif r["type"] == "invoke":
            nemesis_ops += r["n"]
        elif r["type"] == "ok":
            nemesis_done[r["f"]] = nemesis_done.get(r["f"], 0) + r["n"]
    t0 = min((r["t0"] for r in rows if r["t0"] is not None), default=0)
    t1 = max((r["t1"] for r in rows if r["t1"] is not None), default=0)
    outcomes = {r["outcome"]: r["count"] for r in fr.sends.groupBy("outcome").count().collect()}
    return {
        "ops": sum(by_type.values()),
        "client_ops": client_ops,
        "ops_by_type": by_type,
        "sends_attempted": fr.attempted.count(),
        "send_outcomes": outcomes,
        "records_read": fr.reads.count(),
        "nemesis_ops": nemesis_ops,
        "nemesis_done": nemesis_done,
        "faults_injected": faults_injected(nemesis_done),
        "client_events": events,
        "span_s": round((t1 - t0) / 1e9, 3),
    }


def faults_injected(nemesis_done: Mapping[str, int]) -> int:
    """The nemesis ops that took effect and hurt the cluster: heals, waits and marks
    are no fault (catalog.is_fault)."""
    return sum(n for f, n in nemesis_done.items() if is_fault(f))
