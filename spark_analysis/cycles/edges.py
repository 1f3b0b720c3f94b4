"""Dependency cycles between ops: Elle's G0, G1c, G1c-process and G1c-realtime,
over edges built from the facts (facts/derived.py) as Jepsen's Kafka checker builds them
(`ww-graph`, `wr-graph`), with Elle's process and realtime orders.

The edges are DataFrames; ops on no cycle are pruned in Spark while that pays; the
strongly connected components of what is left, and one shortest cycle for each of
the first few, are found on the driver (graph.py). An edge costs 8 bytes
there, and ~100 while rustworkx holds a subgraph (5M ops and 15M ww edges: 1.5 GB
peak, components in 3.5 s), outside the JVM's heap. GraphFrames is no way out for
larger graphs: its components take a Pregel round per step of the longest path, and
each partition's version order is one long path (a ww edge per committed value).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from kafka_trial.spark_analysis.cycles.graph import (
    CHAIN,
    EVENT_BASE,
    PROCESS,
    RT_IN,
    RT_OUT,
    SPECS,
    STEP_KIND,
    WR,
    WW,
    Component,
    Edges,
    components,
)
from kafka_trial.spark_analysis.facts.derived import committed_sends, version_order
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames, check
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

# Components witnessed with a cycle, lowest op index first: results.json keeps this
# many examples (checks/runner.EXAMPLES); the others are counted only.
WITNESSED = 10
# Up to this many edges come to the driver in one job, without counting them first.
COLLECT_AT_ONCE = 200_000
# Edges a job brings to the driver past that: 64 MB of Arrow batches on the JVM's heap.
CHUNK_EDGES = 8_000_000
# Edges the driver takes: 8 bytes each as they arrive, ~40 in numpy columns, ~100
# while rustworkx holds a subgraph; all of it in Python, outside the JVM's heap.
DRIVER_MAX_EDGES = int(os.environ.get("KAFKA_TRIAL_CYCLE_DRIVER_EDGES", 100_000_000))
# Up to this many edges come to the driver whole (in chunks), where trimming
# ops on no cycle is a few numpy passes for each anomaly's kinds (graph._trim).
# Above it Spark prunes first, a join and a count a round, and over every kind at
# once, where the realtime chain keeps almost every op: a 10M-line history's ~50M
# edges went to 46.8M in 8 minutes. So Spark prunes only what the driver cannot take.
PRUNE_ABOVE = int(os.environ.get("KAFKA_TRIAL_CYCLE_SPARK_PRUNE_ABOVE", DRIVER_MAX_EDGES))
PRUNE_ROUNDS = 12
# A pruning round that removes less than this share of the edges is peeling a long
# path one op at a time from each end: the driver does that in one pass.
PRUNE_MIN_GAIN = 0.01

_WHY = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.LongType()),
        T.StructField("value", T.LongType()),
        T.StructField("offset", T.LongType()),
        T.StructField("next_value", T.LongType()),
        T.StructField("next_offset", T.LongType()),
        T.StructField("process", T.StringType()),
    ]
)
_STEP = T.StructType(
    [
        T.StructField("kind", T.StringType()),
        T.StructField("from_op", T.LongType()),
        T.StructField("to_op", T.LongType()),
        T.StructField("from_process", T.StringType()),
        T.StructField("to_process", T.StringType()),
        *_WHY.fields[:6],
        T.StructField("from_done", T.LongType()),
        T.StructField("to_invoked", T.LongType()),
        T.StructField("from_time", T.LongType()),
        T.StructField("to_time", T.LongType()),
    ]
)
_ROW = T.StructType(
    [
        T.StructField("type", T.StringType()),
        T.StructField("first_op", T.LongType()),
        T.StructField("ops", T.LongType()),
        T.StructField("length", T.IntegerType()),
        T.StructField("shortest", T.BooleanType()),
        T.StructField("steps", T.ArrayType(_STEP)),
    ]
)


class CycleGraphTooLarge(RuntimeError):
    pass


def not_searched(fr: Any, mode: str) -> dict[str, str]:
    """The cycle checks that do not run under check.cycles `mode`, with the reason:
    none with "on"; all with "off"; with "auto", all unless the history holds a
    transaction (sends and polls that are no transactions make G0 of every batch
    that crosses another, and cost the search its most edges)."""
    names = [s.name for s in SPECS]
    if mode == "on":
        return {}
    if mode == "off":
        return dict.fromkeys(names, "check.cycles is off")
    if fr.txn_ops:
        return {}
    why = (
        "the history holds no transaction (check.cycles: auto; "
        "set it to on to search sends and polls too)"
    )
    return dict.fromkeys(names, why)


def _rows(fr: AnalysisFrames, name: str) -> DataFrame:
    return fr.shared("cycles", lambda: _find(fr)).filter(F.col("type") == name).drop("type")


@check("G0")
def g0(fr: AnalysisFrames) -> DataFrame:
    return _rows(fr, "G0")


@check("G1c")
def g1c(fr: AnalysisFrames) -> DataFrame:
    return _rows(fr, "G1c")


@check("G1c-process")
def g1c_process(fr: AnalysisFrames) -> DataFrame:
    return _rows(fr, "G1c-process")


@check("G1c-realtime")
def g1c_realtime(fr: AnalysisFrames) -> DataFrame:
    return _rows(fr, "G1c-realtime")


# ---------------------------------------------------------------- the ops


def op_table(fr: AnalysisFrames) -> DataFrame:
    """Client send, txn and poll ops: `op` (the completion's index, the invoke's for
    an op that never completed), process, f, type, `inv` and `done` (the invoke's and
    completion's indexes), and their times. A process has one op outstanding, so an
    invoke's completion is the next line of its process."""

    def build() -> DataFrame:
        w = Window.partitionBy("process").orderBy("index")
        lines = fr.ops.filter(F.col("process") != "nemesis")
        nxt = {c: F.lead(c).over(w) for c in ("index", "type", "time")}
        invokes = lines.select(
            *lines.columns, *[v.alias(f"next_{c}") for c, v in nxt.items()]
        ).filter((F.col("type") == "invoke") & F.col("f").isin("send", "txn", "poll"))
        done = F.col("next_type").isNotNull() & (F.col("next_type") != "invoke")
        return invokes.select(
            F.when(done, F.col("next_index")).otherwise(F.col("index")).alias("op"),
            "process",
            "f",
            F.when(done, F.col("next_type")).otherwise(F.lit("info")).alias("type"),
            F.col("index").alias("inv"),
            F.when(done, F.col("next_index")).alias("done"),
            F.col("time").alias("inv_time"),
            F.when(done, F.col("next_time")).alias("done_time"),
        )

    return fr.shared("cycle_ops", build)


def writer_of(fr: AnalysisFrames) -> DataFrame:
    """value -> op: the op whose send of the value must have committed, for values no
    other op could have written (every other send of it failed). A value sent twice
    (a resend, a copier's second copy) whose writer is in doubt draws no edge: an
    edge from the wrong op could close a cycle that never was."""

    def build() -> DataFrame:
        maybe = (
            fr.sends.filter((F.col("outcome") != "fail") & F.col("value").isNotNull())
            .groupBy("value")
            .agg(F.countDistinct("index").alias("n"), F.min("index").alias("op"))
            .filter(F.col("n") == 1)
            .drop("n")
        )
        committed = committed_sends(fr).select("value", F.col("index").alias("op"))
        return maybe.join(committed, ["value", "op"], "left_semi")

    return fr.shared("writer_of", build)


# ---------------------------------------------------------------- the edges


def _why(**cols: Column) -> Column:
    return F.struct(*[cols.get(f.name, F.lit(None)).cast(f.dataType).alias(f.name) for f in _WHY])


def _edge(src: Column, dst: Column, kind: int, why: Column) -> list[Column]:
    return [src.alias("src"), dst.alias("dst"), F.lit(kind).alias("kind"), why.alias("why")]


def ww_edges(fr: AnalysisFrames) -> DataFrame:
    """Writer of a value -> writer of the next value in its partition's version
    order. An offset known to hold two values (inconsistent-offsets) orders nothing;
    a value at two offsets (duplicate) sits at its first; values with no certain
    writer are left out, so the edge joins the committed values on either side."""
    vo = version_order(fr).filter(
        F.col("value").isNotNull() & F.col("partition").isNotNull() & F.col("offset").isNotNull()
    )
    clash = vo.groupBy(*TP, "offset").agg(F.countDistinct("value").alias("n")).filter("n > 1")
    first = (
        vo.join(clash, [*TP, "offset"], "left_anti")
        .join(writer_of(fr), "value")
        .groupBy(*TP, "value", "op")
        .agg(F.min("offset").alias("offset"))
    )
    w = Window.partitionBy(*TP).orderBy("offset")
    prev = {c: F.lag(c).over(w) for c in ("op", "value", "offset")}
    seq = first.select(*first.columns, *[v.alias(f"prev_{c}") for c, v in prev.items()])
    why = _why(
        topic=F.col("topic"),
        partition=F.col("partition"),
        value=F.col("prev_value"),
        offset=F.col("prev_offset"),
        next_value=F.col("value"),
        next_offset=F.col("offset"),
    )
    return seq.filter(F.col("prev_op").isNotNull() & (F.col("prev_op") != F.col("op"))).select(
        *_edge(F.col("prev_op"), F.col("op"), WW, why)
    )


def wr_edges(fr: AnalysisFrames) -> DataFrame:
    """Writer of a value -> every other op whose ok read returned it."""
    why = _why(
        topic=F.col("topic"),
        partition=F.col("partition"),
        value=F.col("value"),
        offset=F.col("offset"),
    )
    return (
        fr.reads.filter(F.col("value").isNotNull())
        .join(writer_of(fr), "value")
        .filter(F.col("op") != F.col("index"))
        .select(*_edge(F.col("op"), F.col("index"), WR, why))
    )


def order_edges(fr: AnalysisFrames, wr: DataFrame, event_base: int) -> DataFrame:
    """Process and realtime order among the ops a wr edge touches: in a cycle of wr
    and order edges, a run of order edges can be one (both orders are transitive),
    so it leaves a reader for a writer; ops between are left out.

    Process: consecutive ok ops of a process (Elle's process graph). Realtime: ok
    reader a -> writer b when a completed before b was invoked, through a chain of
    events in history order (a -> E(a done) -> ... -> E(b invoked) -> b). A reader
    that completed after every such writer was invoked, like the final drain, and a
    writer invoked before every reader completed, take no event."""
    ops = op_table(fr)
    readers = wr.select(F.col("dst").alias("op")).distinct().join(ops, "op")
    writers = wr.select(F.col("src").alias("op")).distinct().join(ops, "op")
    # A process none of whose ops is read by another has no way back out of its chain
    # (the drain, consumers): its process edges are on no cycle, and a chain of them
    # would keep its reads from being pruned.
    writing = writers.select("process").distinct()
    touched = (
        readers.unionByName(writers)
        .distinct()
        .filter(F.col("type") == "ok")
        .join(writing, "process", "left_semi")
    )
    w = Window.partitionBy("process").orderBy("op")
    proc = touched.select("op", "process", F.lag("op").over(w).alias("prev")).filter(
        F.col("prev").isNotNull()
    )
    process = proc.select(
        *_edge(F.col("prev"), F.col("op"), PROCESS, _why(process=F.col("process")))
    )
    last_inv = writers.agg(F.max("inv").alias("last_inv"))
    first_done = readers.filter(F.col("type") == "ok").agg(F.min("done").alias("first_done"))
    outs = (
        readers.filter(F.col("type") == "ok")
        .crossJoin(last_inv)
        .filter(F.col("done") < F.col("last_inv"))
        .select(*_edge(F.col("op"), F.col("done") + event_base, RT_OUT, _why()))
    )
    ins = (
        writers.crossJoin(first_done)
        .filter(F.col("inv") > F.col("first_done"))
        .select(*_edge(F.col("inv") + event_base, F.col("op"), RT_IN, _why()))
    )
    events = outs.select(F.col("dst").alias("e")).unionByName(ins.select(F.col("src").alias("e")))
    chain = events.select("e", F.lag("e").over(Window.orderBy("e")).alias("prev"))
    chained = chain.filter(F.col("prev").isNotNull()).select(
        *_edge(F.col("prev"), F.col("e"), CHAIN, _why())
    )
    return process.unionByName(outs).unionByName(ins).unionByName(chained)


def edges(fr: AnalysisFrames, event_base: int) -> DataFrame:
    """Every edge once per (src, dst, kind), with the first fact that makes it."""

    def build() -> DataFrame:
        wr = wr_edges(fr)
        every = ww_edges(fr).unionByName(wr).unionByName(order_edges(fr, wr, event_base))
        return every.groupBy("src", "dst", "kind").agg(F.min("why").alias("why"))

    return fr.shared("cycle_edges", build)


# ---------------------------------------------------------------- to the driver


def prune(packed: DataFrame, n: int) -> tuple[DataFrame, int, int]:
    """Edges whose source has an edge in and whose destination has an edge out,
    until that removes (almost) nothing: an op with no edge in or none out is on no
    cycle. Returns the edges left, how many, and the rounds it took."""
    rounds = 0
    while rounds < PRUNE_ROUNDS:
        has_in = packed.select(F.col("dst").alias("src")).distinct()
        has_out = packed.select(F.col("src").alias("dst")).distinct()
        kept = packed.join(has_in, "src", "left_semi").join(has_out, "dst", "left_semi")
        kept = kept.localCheckpoint()
        left = kept.count()
        rounds += 1
        gain = n - left
        packed, n = kept, left
        if gain <= n * PRUNE_MIN_GAIN:
            break
    return packed, n, rounds


def collect_packed(packed: DataFrame, chunks: int = 1) -> np.ndarray:
    """The edges as packed integers (graph.pack), 8 bytes each, in `chunks`
    jobs of Arrow batches. Rows pickled to Python cost a boxed long and a BigInteger
    each on the JVM's heap, and a whole partition at a time, which fills the driver's
    default heap on a large graph (docs/findings.md, "The cycle graph's edges reach
    the driver as Arrow batches")."""
    col = F.shiftleft(F.col("src"), 33) + F.shiftleft(F.col("dst"), 3) + F.col("kind")
    p = packed.select(col.alias("p"))
    parts = [
        (p if chunks == 1 else p.filter(F.pmod(F.col("p"), F.lit(chunks)) == i))
        .toArrow()
        .column("p")
        .to_numpy()
        for i in range(chunks)
    ]
    return np.concatenate(parts).astype(np.int64, copy=False)


def _driver_edges(graph: DataFrame) -> tuple[np.ndarray, dict[str, int]]:
    """The edges the driver searches: all of them in one job when few (counting
    first was two), else counted and collected in chunks of CHUNK_EDGES, pruned in
    Spark first when there are more than PRUNE_ABOVE. With them, how many there were,
    how many came to the driver, and in how many pruning rounds (for benchmarks)."""
    packed = graph.select("src", "dst", "kind")
    small = collect_packed(packed.limit(COLLECT_AT_ONCE + 1))
    stats = {"edges": len(small), "rounds": 0, "driver_edges": len(small)}
    if len(small) <= COLLECT_AT_ONCE:
        return small, stats
    del small
    whole = packed = packed.persist(StorageLevel.MEMORY_AND_DISK)
    n = left = packed.count()
    stats.update(edges=n, driver_edges=n)
    if n > PRUNE_ABOVE:
        packed, left, rounds = prune(whole, n)
        stats.update(rounds=rounds, driver_edges=left)
    if left > DRIVER_MAX_EDGES:
        raise CycleGraphTooLarge(
            f"{left} edges left after pruning, more than the driver takes ({DRIVER_MAX_EDGES}; "
            "KAFKA_TRIAL_CYCLE_DRIVER_EDGES raises it, with the driver's memory)"
        )
    out = collect_packed(packed, max(1, -(-left // CHUNK_EDGES)))
    whole.unpersist()
    return out, stats


def _find(fr: AnalysisFrames) -> DataFrame:
    """Every cycle anomaly's components, one row each (type, first_op, ops, and for
    the first WITNESSED of a type: length, shortest, steps)."""
    graph = edges(fr, EVENT_BASE)
    arr, _ = _driver_edges(graph)
    if len(arr) > DRIVER_MAX_EDGES:
        raise CycleGraphTooLarge(
            f"{len(arr)} edges, more than the driver takes ({DRIVER_MAX_EDGES}; "
            "KAFKA_TRIAL_CYCLE_DRIVER_EDGES raises it, with the driver's memory)"
        )
    unpacked = Edges.of(arr)
    del arr
    found = {spec.name: components(unpacked, spec, EVENT_BASE, WITNESSED) for spec in SPECS}
    del unpacked
    rows = _explained(fr, graph, found)
    return fr.ops.sparkSession.createDataFrame(rows, _ROW)


def _explained(
    fr: AnalysisFrames, graph: DataFrame, found: dict[str, list[Component]]
) -> list[tuple[Any, ...]]:
    """The rows, each witness step with the facts behind it: the value, partition
    and offsets of a ww or wr edge, the process of a process edge, and the ops'
    processes, indexes and times."""
    steps = [s for comps in found.values() for c in comps for s in c.steps or ()]
    why: dict[tuple[int, int, int], dict[str, Any]] = {}
    ops: dict[int, dict[str, Any]] = {}
    if steps:
        wanted = {(u, v, k) for u, v, k in steps if k != RT_OUT}
        if wanted:
            keys = fr.ops.sparkSession.createDataFrame(list(wanted), "src long, dst long, kind int")
            for r in graph.join(F.broadcast(keys), ["src", "dst", "kind"]).collect():
                why[(r["src"], r["dst"], r["kind"])] = r["why"].asDict()
        on = sorted({u for u, _, _ in steps} | {v for _, v, _ in steps})
        listed = ",".join(str(i) for i in on)
        for r in op_table(fr).filter(F.expr(f"op IN ({listed})")).collect():
            ops[r["op"]] = r.asDict()
    rows = []
    for name, comps in found.items():
        for c in comps:
            witness = None if c.steps is None else [_step(s, why, ops) for s in c.steps]
            length = None if c.steps is None else len(c.steps)
            rows.append((name, c.first_op, c.ops, length, c.shortest, witness))
    return rows


def _step(
    s: tuple[int, int, int],
    why: dict[tuple[int, int, int], dict[str, Any]],
    ops: dict[int, dict[str, Any]],
) -> dict[str, Any]:
    u, v, kind = s
    a, b = ops.get(u, {}), ops.get(v, {})
    facts = why.get(s, {})
    realtime = kind == RT_OUT
    return {
        "kind": STEP_KIND[kind],
        "from_op": u,
        "to_op": v,
        "from_process": a.get("process"),
        "to_process": b.get("process"),
        **{f: facts.get(f) for f in ("topic", "partition", "value", "offset")},
        "next_value": facts.get("next_value"),
        "next_offset": facts.get("next_offset"),
        "from_done": a.get("done") if realtime else None,
        "to_invoked": b.get("inv") if realtime else None,
        "from_time": a.get("done_time") or a.get("inv_time"),
        "to_time": b.get("inv_time") if realtime else b.get("done_time") or b.get("inv_time"),
    }
