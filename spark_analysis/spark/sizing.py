"""How one analysis sizes its Spark work: whether the history is judged in one task,
the SQL settings for it, and which JVM profile a one-shot analysis starts."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

from pyspark.sql import SparkSession

# A history up to this size is judged in one task (history_frames.load's one_task):
# on local[*] the planning and scheduling of ~80 shuffle stages cost more than one
# core reading it all, and the checks still run side by side (their union is one
# task each). On a 2-core machine one task won at every size tried: 100 and 113 MB
# campaign histories 25.6 -> 16.6 s and 18.4 -> 13.8 s, the 648 MB benchmark
# history 85.4 -> 72.7 s (README's analysis section). More cores favour splitting
# the input, so the bound shrinks with them (not measured beyond 2 cores).
ONE_TASK_MAX_BYTES_2_CORES = 1 << 30
# Spark SQL settings for a one-task analysis, restored after it: with every input in
# one partition, adaptive re-planning and automatic broadcasts only add jobs, and the
# exchanges that remain (after a union, for the final ranking) need one reducer, not
# eight: a 9-op history's warm analysis took 8.0 s with 8 and 6.9 s with 1 (mean of 5).
# A union of one-partition inputs is left as one partition per input: by default
# Spark zips them into one, and the checks' union (the per-partition kernel's and the
# value kernel's rows) then ran both kernels one after the other in a single task,
# one core idle. Unzipped they run side by side (the default run's history: the
# checks' job 7.7 s in one task, 5.4 s as two; the inputs each kernel groups are
# coalesced back to one partition, `one_partition`, so no shuffle is added for them).
_ONE_TASK_SQL = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.unionOutputPartitioning": "false",
}


# On a cluster, a shuffle partition per this much history, and at least two per core:
# the session's 64 made a 5-line history's checks take 52 s on a 1-core standalone
# worker, 26 s with 4 (and 25 s with 2), every stage scheduling 64 remote tasks.
CLUSTER_BYTES_PER_PARTITION = 64 << 20


def cluster_sql(size: int, parallelism: int) -> dict[str, str]:
    """Spark SQL settings for one analysis on a cluster (spark://...)."""
    parts = max(2 * parallelism, -(-size // CLUSTER_BYTES_PER_PARTITION))
    return {"spark.sql.shuffle.partitions": str(parts)}


# A one-shot analysis (analyze's `one_shot`) starts a C1-only JVM for a local history
# up to this size (session.JIT_ONE_SHOT). Measured faster and cheaper on a 2,164-line
# history; on the benchmark's default-run history (93 MB) its ratio to a bare session
# was the same (8.5x both ways, on different hours), so above this the long-lived
# profile stays, where C2 pays for the big histories' loops.
ONE_SHOT_C1_MAX_BYTES = 64 << 20


def one_task_max_bytes(cores: int = 2) -> int:
    bound = max(64 << 20, ONE_TASK_MAX_BYTES_2_CORES * 2 // max(cores, 2))
    return int(os.environ.get("KAFKA_TRIAL_ONE_TASK_BYTES", bound))


def analysis_sql(
    spark: SparkSession, local_bytes: int | None, size: Callable[[], int]
) -> tuple[bool, dict[str, str]]:
    """Whether the history is judged in one task, and the SQL settings for it.
    `local_bytes`: the size of a history on this machine (None for a remote one);
    `size` gives any history's, asked only for a cluster (a remote one's is a call
    through Hadoop)."""
    local = spark.sparkContext.master.startswith("local")
    cores = spark.sparkContext.defaultParallelism
    one_task = local and local_bytes is not None and local_bytes <= one_task_max_bytes(cores)
    settings = _ONE_TASK_SQL if one_task else {} if local else cluster_sql(size(), cores)
    return one_task, settings


@contextlib.contextmanager
def sql_settings(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Session SQL settings for one analysis: several analyses share a session."""
    saved = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
