"""Read a history.jsonl into the DataFrames the checks share.

`value` is polymorphic (micro-ops for clients, any JSON for the nemesis), so it
is read as raw JSON text and parsed only where a client op needs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    LongType,
    StringType,
    StructField,
    StructType,
)

RECORD = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", LongType()),
        StructField("offset", LongType()),
        StructField("value", LongType()),
    ]
)

OFFSET = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", LongType()),
        StructField("offset", LongType()),
    ]
)

MICRO_OPS = ArrayType(
    StructType(
        [
            StructField("op", StringType()),
            StructField("topic", StringType()),
            StructField("partition", LongType()),
            StructField("value", LongType()),
            StructField("offset", LongType()),
            StructField("outcome", StringType()),
            StructField("records", ArrayType(RECORD)),
            StructField("offsets", ArrayType(OFFSET)),
            StructField("partitions", ArrayType(LongType())),
            StructField("role", StringType()),
            StructField("at_end", ArrayType(OFFSET)),
        ]
    )
)

# `value` is polymorphic: micro-ops for client ops, any JSON for the nemesis. Reading
# it straight into the micro-op type parses each line once; a nemesis value that
# does not fit comes back null (with the line in _corrupt) and is not needed here.
HISTORY_SCHEMA = StructType(
    [
        StructField("index", LongType()),
        StructField("time", LongType()),
        StructField("type", StringType()),
        StructField("process", StringType()),
        StructField("f", StringType()),
        StructField("value", MICRO_OPS),
        StructField("error", StringType()),
        StructField("_corrupt", StringType()),
    ]
)

SEND_FS = ("send", "txn")
GROUP_FS = ("process", "commit", "group-offsets", "assign", "revoke", "lost", "crash")
READ_FS = ("poll", "txn")


@dataclass(frozen=True)
class Frames:
    ops: DataFrame  # every parsed line, without `value`: index, time, type, process, f
    damaged: int  # lines that are not JSON objects
    open_invokes: int  # invokes with no completion (the history was cut off)
    attempted: DataFrame  # value: every value any send invoked
    sends: DataFrame  # value, process, index, pos, f, topic, partition, offset, outcome
    reads: DataFrame  # value, topic, partition, offset, index, process, rpos, role, f (ok ops)
    processed: DataFrame  # value, topic, partition, offset, index, process
    group_offsets: DataFrame  # role, topic, partition, committed (each group's final offsets)
    rebalances: DataFrame  # process, index of each assign / revoke / lost event
    # value, topic, partition, offset, index, process, type: the records a txn op's poll
    # micro-op returned, whatever the op's outcome (reads holds only the ok ones)
    txn_polls: DataFrame
    drain_ends: DataFrame  # topic, partition: partitions the final drain read to their end


def _send_rows(df: DataFrame, outcome: Column) -> DataFrame:
    return (
        df.select("index", "process", "f", "type", F.posexplode("micro").alias("pos", "m"))
        .filter(F.col("m.op") == "send")
        .select(
            F.col("m.value").alias("value"),
            "process",
            "index",
            "pos",
            "f",
            F.col("m.topic").alias("topic"),
            F.col("m.partition").alias("partition"),
            F.col("m.offset").alias("offset"),
            outcome.alias("outcome"),
        )
    )


def load(spark: SparkSession, path: str) -> Frames:
    raw = (
        spark.read.schema(HISTORY_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt")
        .json(path)
    )
    client_fs = (*SEND_FS, *READ_FS, *GROUP_FS)
    is_client = (F.col("process") != "nemesis") & F.col("f").isin(*client_fs)
    # Damaged: not an op at all, or a client op whose micro-ops do not fit the format.
    ok_line = (
        F.col("index").isNotNull()
        & F.col("type").isNotNull()
        & ~(is_client & F.col("_corrupt").isNotNull())
    )
    parsed = raw.select(
        "index",
        "time",
        "type",
        "process",
        "f",
        ok_line.alias("ok_line"),
        F.when(is_client, F.col("value")).alias("micro"),
    )
    good = parsed.filter(F.col("ok_line"))
    narrow = parsed.select("index", "time", "type", "process", "f", "ok_line").cache()
    damaged = narrow.filter(~F.col("ok_line")).count()
    ops = narrow.filter(F.col("ok_line")).drop("ok_line")

    # The op that completes an invoke is the next op of the same process; the window
    # runs over the narrow columns only.
    w = Window.partitionBy("process").orderBy("index")
    open_idx = (
        ops.filter(F.col("process") != "nemesis")
        .withColumn("next_type", F.lead("type").over(w))
        .filter((F.col("type") == "invoke") & F.col("next_type").isNull())
        .select("index")
        .cache()
    )
    open_invokes = open_idx.count()

    client = good.filter(F.col("micro").isNotNull())
    invokes = client.filter((F.col("type") == "invoke") & F.col("f").isin(*SEND_FS))
    attempted = (
        invokes.select(F.explode("micro").alias("m"))
        .filter(F.col("m.op") == "send")
        .select(F.col("m.value").alias("value"))
        .distinct()
        .cache()
    )
    completions = client.filter(F.col("type").isin("ok", "fail", "info"))
    completed_sends = _send_rows(
        completions.filter(F.col("f").isin(*SEND_FS)),
        # Inside a txn the op's type is the outcome of every send in it.
        F.when(F.col("f") == "txn", F.col("type")).otherwise(
            F.coalesce(F.col("m.outcome"), F.col("type"))
        ),
    )
    # An invoke with no completion (the history was cut off) is indeterminate.
    unmatched = _send_rows(invokes.join(F.broadcast(open_idx), "index"), F.lit("info")).withColumn(
        "offset", F.lit(None).cast(LongType())
    )
    sends = completed_sends.unionByName(unmatched).cache()

    # Every record a poll micro-op returned, with the op's type and the poll's role
    # ("drain" for the final drain); only ok ops' records count as reads.
    polled = (
        completions.filter(F.col("f").isin(*READ_FS))
        .select("index", "process", "f", "type", F.explode("micro").alias("m"))
        .filter(F.col("m.op") == "poll")
        .select(
            "index",
            "process",
            "f",
            "type",
            F.col("m.role").alias("role"),
            F.posexplode("m.records").alias("rpos", "r"),
        )
        .select(
            F.col("r.value").alias("value"),
            F.col("r.topic").alias("topic"),
            F.col("r.partition").alias("partition"),
            F.col("r.offset").alias("offset"),
            "index",
            "process",
            "rpos",
            "role",
            "f",
            "type",
        )
    )
    reads = polled.filter(F.col("type") == "ok").drop("type").cache()
    txn_polls = polled.filter(F.col("f") == "txn").select(
        "value", "topic", "partition", "offset", "index", "process", "type"
    )
    processed = (
        completions.filter((F.col("type") == "ok") & (F.col("f") == "process"))
        .select("index", "process", F.explode("micro").alias("m"))
        .select("index", "process", F.explode("m.records").alias("r"))
        .select(
            F.col("r.value").alias("value"),
            F.col("r.topic").alias("topic"),
            F.col("r.partition").alias("partition"),
            F.col("r.offset").alias("offset"),
            "index",
            "process",
        )
    )
    group_offsets = (
        completions.filter((F.col("type") == "ok") & (F.col("f") == "group-offsets"))
        .select(F.explode("micro").alias("m"))
        .select(
            F.coalesce(F.col("m.role"), F.lit("consumer")).alias("role"),
            F.explode("m.offsets").alias("o"),
        )
        .select(
            "role",
            F.col("o.topic").alias("topic"),
            F.col("o.partition").alias("partition"),
            F.col("o.offset").alias("committed"),
        )
        .filter(F.col("committed").isNotNull())
    )
    drain_ends = (
        completions.filter((F.col("type") == "ok") & (F.col("f") == "poll"))
        .select(F.explode("micro").alias("m"))
        .filter(F.col("m.role") == "drain")
        .select(F.explode("m.at_end").alias("e"))
        .select(F.col("e.topic").alias("topic"), F.col("e.partition").alias("partition"))
        .distinct()
    )
    rebalances = completions.filter(
        (F.col("type") == "ok") & F.col("f").isin("assign", "revoke", "lost")
    ).select("process", "index")
    return Frames(
        ops,
        damaged,
        open_invokes,
        attempted,
        sends,
        reads,
        processed,
        group_offsets,
        rebalances,
        txn_polls,
        drain_ends,
    )
