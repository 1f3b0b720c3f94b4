"""Values no read returned, where nothing proves them gone: `unseen` is undecided.

Absence proves a loss only where the history proves someone looked: a read of the
partition past the value's offset, or the final drain reading the partition to its
end (those are `lost-write`). Any other value nobody read may be late, not lost: a
drain that never returned a record, a cluster that never became healthy again, or
a drain that ran out of time. So `unseen` never makes a verdict invalid; it makes it
unknown, and says which partitions the drain did not finish and why.
"""

from __future__ import annotations

from typing import Any

from kafka_trial.spark_analysis.checks_writes import unseen
from kafka_trial.spark_analysis.history_frames import Frames
from kafka_trial.spark_analysis.shared_frames import TP, Plan
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

NO_DRAIN = "the final drain never ran"
# Unfinished partitions named in a finding; more are counted.
NAMED = 8


def undecided_unseen(
    fr: Frames, anomalies: dict[str, dict[str, Any]], allowed: tuple[str, ...]
) -> list[str]:
    """Marks a non-zero `unseen` undecided, with why, and returns the problem that
    keeps the verdict from being decided (none when `unseen` is allowed)."""
    found = anomalies["unseen"]
    if not found.get("count"):
        return []
    why = drain_shortfall(fr)
    found["undecided"] = why
    if not fr.drain_ran:
        return [
            f"{NO_DRAIN} (the run was cut off before it): values nobody read are unseen, "
            "which proves nothing; rerun, or `kafka-trial finish` the run while its cluster "
            "is up"
        ]
    if "unseen" in allowed:
        return []
    return [
        f"{found['count']} acknowledged value(s) were never read where nothing proves them "
        f"gone ({why}): late and lost look the same"
    ]


def drain_reach(fr: Plan) -> DataFrame:
    """Per partition the final drain touched: `drain_end` (its end marker: it read the
    partition to its end there; null if it never did) and `drain_max_offset` (the
    highest offset it returned; null if none)."""
    returned = (
        fr.reads.filter(F.col("role").eqNullSafe("drain"))
        .groupBy(*TP)
        .agg(F.max("offset").alias("drain_max_offset"))
    )
    ends = fr.drain_ends.withColumnRenamed("end_offset", "drain_end")
    return returned.join(ends, TP, "full")


def drain_shortfall(fr: Frames) -> str:
    """The partitions holding values no read returned that the final drain did not
    finish, each with what the history says about why."""
    if not fr.drain_ran:
        return NO_DRAIN
    plan = Plan(fr)
    try:
        rows = (
            unseen(plan)
            .groupBy(*TP)
            .agg(F.count("*").alias("values"))
            .join(drain_reach(plan), TP, "left")
            .orderBy(*TP)
            .collect()
        )
    finally:
        plan.release()
    named = [f"{_where(r)} ({_reason(r)})" for r in rows[:NAMED]]
    if len(rows) > NAMED:
        named.append(f"and {len(rows) - NAMED} more partition(s)")
    text = "the final drain did not finish " + ", ".join(named)
    health = _last_health(fr)
    if health is not None and health != "ok":
        text += f"; the cluster was not healthy before the drain (await-healthy ended {health})"
    return text


def _where(r: Any) -> str:
    if r["partition"] is None:
        return f"{r['topic']} (partition unknown)"
    return f"{r['topic']}/{r['partition']}"


def _reason(r: Any) -> str:
    if r["partition"] is None:
        return "no offset or partition known"
    if r["drain_max_offset"] is None and r["drain_end"] is None:
        return "no record returned"
    return "time limit: the drain stopped before the value's offset and the partition's end"


def _last_health(fr: Frames) -> str | None:
    """How the last wait for a healthy cluster ended, before the drain."""
    done = (
        fr.ops.filter(
            (F.col("process") == "nemesis")
            & (F.col("f") == "await-healthy")
            & (F.col("type") != "invoke")
        )
        .orderBy(F.col("index").desc())
        .limit(1)
        .collect()
    )
    return done[0]["type"] if done else None
