"""Read a history.jsonl into the DataFrames the checks share.

`value` is polymorphic (micro-ops for clients, any JSON for the nemesis), so it
is read as raw JSON text and parsed only where a client op needs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    LongType,
    StringType,
    StructField,
    StructType,
)

HISTORY_SCHEMA = StructType(
    [
        StructField("index", LongType()),
        StructField("time", LongType()),
        StructField("type", StringType()),
        StructField("process", StringType()),
        StructField("f", StringType()),
        StructField("value", StringType()),
        StructField("error", StringType()),
        StructField("_corrupt", StringType()),
    ]
)

RECORD = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", LongType()),
        StructField("offset", LongType()),
        StructField("value", LongType()),
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
        ]
    )
)

SEND_FS = ("send", "txn")
READ_FS = ("poll", "txn")


@dataclass(frozen=True)
class Frames:
    ops: DataFrame  # every parsed line
    damaged: int  # lines that are not JSON objects
    attempted: DataFrame  # value: every value any send invoked
    sends: DataFrame  # value, process, index, pos, topic, partition, offset, outcome
    reads: DataFrame  # value, topic, partition, offset, index, process


def load(spark: SparkSession, path: str) -> Frames:
    raw = (
        spark.read.schema(HISTORY_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt")
        .json(path)
    )
    raw = raw.cache()
    damaged = raw.filter(F.col("_corrupt").isNotNull() | F.col("index").isNull()).count()
    ops = raw.filter(F.col("_corrupt").isNull() & F.col("index").isNotNull()).drop("_corrupt")
    client = ops.filter(F.col("process") != "nemesis")

    # The op each invoke completes with is the next op of the same process.
    w = Window.partitionBy("process").orderBy("index")
    paired = client.withColumn("next_type", F.lead("type").over(w))

    micro = F.from_json(F.col("value"), MICRO_OPS)
    invokes = paired.filter((F.col("type") == "invoke") & F.col("f").isin(*SEND_FS))
    attempted = (
        invokes.select(F.explode(micro).alias("m"))
        .filter(F.col("m.op") == "send")
        .select(F.col("m.value").alias("value"))
        .distinct()
    )

    completions = client.filter(F.col("type").isin("ok", "fail", "info"))
    completed_sends = (
        completions.filter(F.col("f").isin(*SEND_FS))
        .select("index", "process", "f", "type", F.posexplode(micro).alias("pos", "m"))
        .filter(F.col("m.op") == "send")
        .select(
            F.col("m.value").alias("value"),
            "process",
            "index",
            "pos",
            F.col("m.topic").alias("topic"),
            F.col("m.partition").alias("partition"),
            # Inside a txn the op's type is the outcome of every send in it.
            F.col("m.offset").alias("offset"),
            F.when(F.col("f") == "txn", F.col("type"))
            .otherwise(F.coalesce(F.col("m.outcome"), F.col("type")))
            .alias("outcome"),
        )
    )
    # An invoke with no completion (the history was cut off) is indeterminate.
    unmatched = (
        invokes.filter(F.col("next_type").isNull())
        .select("index", "process", F.posexplode(micro).alias("pos", "m"))
        .filter(F.col("m.op") == "send")
        .select(
            F.col("m.value").alias("value"),
            "process",
            "index",
            "pos",
            F.col("m.topic").alias("topic"),
            F.col("m.partition").alias("partition"),
            F.lit(None).cast(LongType()).alias("offset"),
            F.lit("info").alias("outcome"),
        )
    )
    sends = completed_sends.unionByName(unmatched).cache()

    reads = (
        completions.filter((F.col("type") == "ok") & F.col("f").isin(*READ_FS))
        .select("index", "process", F.explode(micro).alias("m"))
        .filter(F.col("m.op") == "poll")
        .select("index", "process", F.explode("m.records").alias("r"))
        .select(
            F.col("r.value").alias("value"),
            F.col("r.topic").alias("topic"),
            F.col("r.partition").alias("partition"),
            F.col("r.offset").alias("offset"),
            "index",
            "process",
        )
        .cache()
    )
    return Frames(ops, damaged, attempted, sends, reads)
