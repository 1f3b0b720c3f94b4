"""Spike: can one per-partition Arrow kernel replace the query-per-check design?

    nice -n 19 python bench/kernel_spike.py [--sizes 100k,2M] [--runs DIR,..] [--no-analyze]

Histories with planted anomalies (analysis_bench.py's generator; --runs adds run dirs)
are read into `Frames` as job.py reads them; eight checks are computed two ways in one
Spark session from the same cached frames: (a) the check queries, by the runner's own
one-job path (runner._judged, the other checks skipped); (b) one
groupBy("topic", "partition").applyInArrow(kernel) pass (numpy/pyarrow: each check's
count and witnesses per partition), then a value-keyed `second_pass` for what spans
partitions. Counts must agree (else exit 1). (b)'s stages: the JVM's exchange and sort
alone, then with an empty kernel (Arrow transfer, Python workers), the kernel's CPU.
Last, with the spike's session stopped, a cold `kafka-trial analyze` of the last
history. Without pandas, pandas_udf's driver-side guard is disabled (see below).

Since the kernel landed (spark_analysis/checks/partition_kernel.py), (a) runs the
package's own path, which for seven of these checks is that kernel: the queries it
replaced are tests/query_checks.py. The spike stays as the record of the measurement.

Generated histories have no poll anomalies; kernel_spike_mutate.py plants some (and
values read outside their partition) in a copy, for --runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# The checks by the facts they share; (a) is also timed per group, (b)'s kernel too.
GROUPS = {"offsets": ("inconsistent-offsets",), "sends": ("reorder",),
          "polls": ("nonmonotonic-poll", "int-nonmonotonic-poll"),
          "skips": ("poll-skip", "int-poll-skip"), "lost": ("lost-write", "unseen")}  # fmt: skip
CHECKS = tuple(c for names in GROUPS.values() for c in names)
EXAMPLES = 10
TP = ["topic", "partition"]
_OUT = "kind string, topic string, partition long, n long, value long, flag string, detail string"
_TYPES = {"string": pa.string(), "long": pa.int64()}
OUT = pa.schema([(c, _TYPES[t]) for c, t in map(str.split, _OUT.split(", "))])
POLL_KEYS = ["process", "prev_index", "prev_offset", "prev_value", "index", "offset", "value"]
INT_POLL_KEYS = ["index", "process", "prev_offset", "prev_value", "offset", "value"]
SKIP = ["index", "process", "prev_offset", "offset"]
SKIPS = [("poll-skip", False, ["prev_index", *SKIP]), ("int-poll-skip", True, SKIP)]


def load_bench() -> ModuleType:
    """analysis_bench.py, imported from its path (bench/ is no package)."""
    path = Path(__file__).parent / "analysis_bench.py"
    spec = importlib.util.spec_from_file_location("analysis_bench", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["analysis_bench"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def allow_arrow_without_pandas() -> str:
    if importlib.util.find_spec("pandas") is not None:
        return "pandas installed"
    import pyspark.sql.pandas.functions as pf

    # pandas_udf's guard is the one pandas import on the Arrow path (tried: without it
    # applyInArrow and mapInArrow run, and the workers never import pandas).
    pf.require_minimum_pandas_version = lambda: None
    return "pandas absent: pandas_udf's require_minimum_pandas_version disabled"


# --- the kernel: runs in the Python workers, one call per (topic, partition) ----------


def _np(col: Any, fill: int) -> np.ndarray:
    return np.asarray(pc.fill_null(col, fill).to_numpy(zero_copy_only=False))


def _codes(col: Any) -> np.ndarray:
    return _np(pc.index_in(col, value_set=pc.unique(col)), -1)


def _dedupe(t: pa.Table) -> pa.Table:
    # The runner counts distinct rows (its key is the row's JSON): nulls are equal.
    return t.group_by(t.column_names, use_threads=False).aggregate([]) if t.num_rows else t


def _emit(out: list[dict[str, Any]], kind: str, rows: pa.Table, flag: Any = None) -> None:
    detail = json.dumps(rows.slice(0, EXAMPLES).to_pylist(), default=str)
    out.append({"kind": kind, "n": rows.num_rows, "detail": detail, "flag": flag})


class Pairs(NamedTuple):
    """Consecutive poll reads of one process in one partition (reads.py's
    `_consecutive_reads`, no rebalance): rows `cur` of `t`, each after `cur - 1`."""

    t: pa.Table
    cur: np.ndarray
    off: np.ndarray
    off_ok: np.ndarray
    same_op: np.ndarray

    def rows(self, sel: np.ndarray, cols: list[str]) -> pa.Table:
        i, t = self.cur[sel], self.t
        got = {c: t[c].take(i) for c in ("process", "index", "offset", "value")}
        got |= {f"prev_{c}": t[c].take(i - 1) for c in ("index", "offset", "value")}
        return _dedupe(pa.table({c: got[c] for c in cols}))


def _pairs(reads: pa.Table) -> Pairs:
    # Spark hands a group's rows over unordered: the window's order is made here.
    t = reads.filter(pc.equal(reads["f"], "poll"))
    t = t.sort_by([(c, "ascending") for c in ("process", "index", "pos", "rpos")])
    proc, off = _codes(t["process"]), _np(t["offset"], 0)
    idx, rpos = _np(t["index"], -1), _np(t["rpos"], -1)
    off_ok = np.asarray(pc.is_valid(t["offset"]).to_numpy(zero_copy_only=False))
    keep = (proc[1:] == proc[:-1]) & (rpos[1:] >= 0) & (rpos[:-1] >= 0) & off_ok[:-1]
    cur = np.nonzero(keep)[0] + 1
    return Pairs(t, cur, off, off_ok, idx[cur] == idx[cur - 1])


def _inconsistent(committed: pa.Table, recs: pa.Table, part_null: bool) -> pa.Table:
    """derived.version_order grouped by offset: offsets holding two values or more."""
    parts = [recs.select(["offset", "value"])]
    if not part_null:  # version_order takes the sends of a known partition only
        parts.append(committed.filter(pc.is_valid(committed["offset"])).select(["offset", "value"]))
    vo = pa.concat_tables(parts)
    vo = vo.filter(pc.is_valid(vo["value"]))  # collect_set drops nulls
    g = vo.group_by("offset", use_threads=False).aggregate([("value", "distinct")])
    return g.filter(pc.greater(pc.list_value_length(g["value_distinct"]), 1)).sort_by("offset")


def _reorder(committed: pa.Table) -> pa.Table:
    """writes.reorder: an acked send below its process's previous one, by (index, pos)."""
    t = committed.filter(pc.is_valid(committed["offset"]))
    t = t.sort_by([(c, "ascending") for c in ("process", "index", "pos")])
    proc, off = _codes(t["process"]), _np(t["offset"], 0)
    i = np.nonzero((proc[1:] == proc[:-1]) & (off[:-1] > off[1:]))[0] + 1
    cols = {"process": t["process"].take(i), "prev_value": t["value"].take(i - 1)}
    cols |= {"prev_offset": t["offset"].take(i - 1), "value": t["value"].take(i)}
    return _dedupe(pa.table({**cols, "offset": t["offset"].take(i)}))


def _skips(p: Pairs, sends: pa.Table, committed: pa.Table, reads: pa.Table, out: list[Any]) -> None:
    """reads._skips, both checks: gaps over an offset known to hold a record. A read
    of a value with no send here that may have been written is `unsure` (known
    positions leave out never-written values, a value-keyed fact): a gap that only
    such reads fill goes out pending, with their values, for the second pass."""
    maybe = pc.unique(sends.filter(pc.not_equal(sends["status"], "fail"))["value"])
    sure = pc.or_(pc.is_null(reads["value"]), pc.is_in(reads["value"], value_set=maybe))
    known = [committed["offset"].drop_null(), reads.filter(sure)["offset"].drop_null()]
    ks = np.unique(np.concatenate([_np(k, 0) for k in known]))
    unsure = reads.filter(pc.invert(sure))
    unsure = unsure.filter(pc.is_valid(unsure["offset"])).sort_by("offset")
    u_off, u_val = _np(unsure["offset"], 0), unsure["value"]
    gap = p.off_ok[p.cur] & (p.off[p.cur] > p.off[p.cur - 1] + 1)
    for name, within, keys in SKIPS:
        rows = p.rows(gap & (p.same_op == within), keys)
        lo, hi = _np(rows["prev_offset"], 0), _np(rows["offset"], 0)
        a, b = np.searchsorted(ks, lo, "right"), np.searchsorted(ks, hi, "left")
        hit = b > a  # some known offset strictly between: one sorted lookup per gap
        ends = zip(a[hit][:EXAMPLES], b[hit][:EXAMPLES], strict=True)
        skipped = json.dumps([ks[x:y][:9].tolist() for x, y in ends])  # the witnesses'
        _emit(out, name, rows.filter(pa.array(hit)), skipped)
        ua, ub = np.searchsorted(u_off, lo, "right"), np.searchsorted(u_off, hi, "left")
        for r in np.nonzero(~hit & (ub > ua))[0]:
            key = json.dumps(rows.slice(int(r), 1).to_pylist()[0])
            for v in u_val[ua[r] : ub[r]].to_pylist():
                out.append({"kind": f"pending {name}", "detail": key, "value": v})


def _reason(off: int | None, max_read: int | None, end: int | None) -> str | None:
    """writes.lost_write's reason, for one never-read send."""
    if off is not None and max_read is not None and max_read >= off:
        return "read past"
    if end is None:
        return None
    if off is None:
        return "read to end"
    return "truncated" if off >= end else "below the drain's end"


def _candidates(committed: pa.Table, reads: pa.Table, ends: pa.Table, null_tp: bool) -> list[Any]:
    """Committed sends no read of this partition returned, with lost-write's reason
    (None: unseen). Whether a read elsewhere returned them is the second pass's."""
    read = pc.is_in(committed["value"], value_set=pc.unique(reads["value"].drop_null()))
    never = committed.filter(pc.invert(read))
    # A join on a null key matches nothing: such a partition has no reach and no end.
    max_read = None if null_tp else pc.max(reads["offset"]).as_py()
    end = None if null_tp else pc.max(ends["offset"]).as_py()
    out = []
    for r in never.select(["value", "offset", "process"]).to_pylist():
        why = _reason(r["offset"], max_read, end)
        detail = json.dumps({**r, "max_read_offset": max_read, "drain_end": end, "reason": why})
        out.append({"kind": "cand", "value": r["value"], "flag": why, "detail": detail})
    return out


def kernel(key: tuple[pa.Scalar, ...], t: pa.Table) -> pa.Table:
    """Every check of CHECKS for one (topic, partition), what the second pass needs
    (candidate and pending rows), and the CPU each check group took."""
    clock = [time.process_time_ns()]
    tp = (key[0].as_py(), key[1].as_py())
    out: list[dict[str, Any]] = [{"kind": "rows", "n": t.num_rows}]

    def lap(group: str) -> None:
        clock.append(time.process_time_ns())
        out.append({"kind": "cpu", "flag": group, "n": clock[-1] - clock[-2]})

    sends, ends = t.filter(pc.equal(t["src"], "s")), t.filter(pc.equal(t["src"], "e"))
    recs = t.filter(pc.equal(t["src"], "r"))
    reads = recs.filter(pc.equal(recs["status"], "ok"))
    # must_commit is "acknowledged": the driver refuses histories with unknown txns.
    committed = sends.filter(pc.equal(sends["status"], "ok"))
    lap("split")
    _emit(out, "inconsistent-offsets", _inconsistent(committed, recs, tp[1] is None))
    lap("offsets")
    _emit(out, "reorder", _reorder(committed))
    lap("sends")
    p = _pairs(reads)
    back = p.off_ok[p.cur] & (p.off[p.cur] <= p.off[p.cur - 1])
    _emit(out, "nonmonotonic-poll", p.rows(back & ~p.same_op, POLL_KEYS))
    _emit(out, "int-nonmonotonic-poll", p.rows(back & p.same_op, INT_POLL_KEYS))
    lap("polls")
    if None not in tp:  # a gap in a null partition joins no known offset
        _skips(p, sends, committed, reads, out)
    lap("skips")
    out += _candidates(committed, reads, ends, None in tp)
    lap("lost")
    rows = [{"topic": tp[0], "partition": tp[1], **r} for r in out]
    return pa.Table.from_pylist(rows, schema=OUT)


# --- the driver ------------------------------------------------------------------------


def kernel_input(fr: Any) -> Any:
    """The sends, every polled record and the drain's ends, as the frames project the
    flat rows (`sends` holds the open invokes' sends too)."""
    cols = "topic, partition, value, offset, index, process"
    s = fr.sends.selectExpr(*f"'s' src, {cols}, pos, f, outcome status".split(", "))
    r = fr.polled.selectExpr(*f"'r' src, {cols}, mpos pos, rpos, f, type status".split(", "))
    e = fr.drain_ends.selectExpr("'e' src", "topic", "partition", "end_offset offset")
    return s.unionByName(r, allowMissingColumns=True).unionByName(e, allowMissingColumns=True)


def second_pass(fr: Any, values: list[int]) -> tuple[set[int], set[int]]:
    """The value-keyed facts, for the few values the kernels flagged: which an ok read
    returned in any partition (a send never read in its own may be read elsewhere),
    and which no send may have written (each failed, in whatever partition). One scan
    of the cached sends and reads, filtered by an IN list: no shuffle of rows."""
    if not values:
        return set(), set()
    want = f"value IN ({','.join(map(str, values))})"
    reads = fr.reads.filter(want).selectExpr("value", "1 read", "CAST(NULL AS INT) w")
    sends = fr.sends.filter(want).selectExpr("value", "0 read", "IF(outcome != 'fail', 1, 0) w")
    got = reads.unionByName(sends).groupBy("value").agg({"read": "max", "w": "max"}).collect()
    read = {r["value"] for r in got if r["max(read)"] == 1}
    return read, {r["value"] for r in got if r["max(w)"] == 0}


def run_kernel(spark: Any, fr: Any, parts: int) -> dict[str, Any]:
    """(b): the kernel pass, then the second pass, and the counts they make."""
    from kafka_trial.spark_analysis.spark.sizing import sql_settings

    counts, cpu = dict.fromkeys(CHECKS, 0), dict.fromkeys(["split", *GROUPS], 0.0)
    cands: dict[Any, bool] = {}  # value -> whether a never-read send of it has a reason
    pending: dict[tuple[Any, ...], list[int]] = {}
    rows_in = 0
    with sql_settings(spark, {"spark.sql.shuffle.partitions": str(parts)}):
        t0 = time.monotonic()
        got = kernel_input(fr).groupBy(*TP).applyInArrow(kernel, _OUT).collect()
        t1 = time.monotonic()
        for r in got:
            k = r["kind"]
            if k == "rows":
                rows_in += r["n"]
            elif k == "cpu":
                cpu[r["flag"]] += r["n"] / 1e9
            elif k == "cand":  # a null value would count by its row in (a): none here
                cands[r["value"]] = cands.get(r["value"], False) or r["flag"] is not None
            elif k.startswith("pending "):
                gap = (k[8:], r["topic"], r["partition"], r["detail"])
                pending.setdefault(gap, []).append(r["value"])
            else:
                counts[k] += r["n"]
        values = {v for v in cands if v is not None} | {v for vs in pending.values() for v in vs}
        read, never_written = second_pass(fr, sorted(values))
        t2 = time.monotonic()
    # What the kernels alone would say (no value read elsewhere, every unsure value
    # never written), beside what the second pass makes of it.
    n_lost = sum(cands.values())
    alone = counts | {"lost-write": n_lost, "unseen": len(cands) - n_lost}
    lost = {v for v, why in cands.items() if why and v not in read}
    counts["lost-write"] = len(lost)
    counts["unseen"] = len({v for v in cands if v not in read} - lost)
    for (name, *_), vs in pending.items():
        counts[name] += any(v not in never_written for v in vs)
    out = dict(counts=counts, alone=alone, cpu=cpu, rows_in=rows_in, n2=len(values))
    return out | {"pass_s": t1 - t0, "second_s": t2 - t1, "total_s": t2 - t0}


def kernel_floors(spark: Any, fr: Any, parts: int) -> dict[str, float]:
    """(b) without its kernel: the JVM's exchange and sort by (topic, partition) alone;
    the same shipped to Python as Arrow (applyInArrow, empty kernel); and that with the
    strings sent as 4-byte hashes (what shipping could shrink to: no check reads them
    but as codes)."""
    from kafka_trial.spark_analysis.spark.sizing import sql_settings

    inp = kernel_input(fr)
    coded = inp.selectExpr(*TP, "value", "offset", "index", "pos", "rpos", "hash(process) p",
                           "hash(src, f, status) tag")  # fmt: skip
    took = {}
    with sql_settings(spark, {"spark.sql.shuffle.partitions": str(parts)}):
        t0 = time.monotonic()
        by_tp = inp.repartition(parts, *TP).sortWithinPartitions(*TP)
        by_tp.write.format("noop").mode("overwrite").save()
        for name, df in (("jvm_s", None), ("arrow_s", inp), ("coded_s", coded)):
            if df is not None:
                df.groupBy(*TP).applyInArrow(lambda k, t: OUT.empty_table(), _OUT).collect()
            took[name], t0 = time.monotonic() - t0, time.monotonic()
    return took


def run_queries(frames: Any, only: tuple[str, ...]) -> tuple[dict[str, int | None], float]:
    """(a): the runner's one-job path (runner._judged), the other checks skipped."""
    from kafka_trial.spark_analysis.checks import runner
    from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames

    skip = {name: "not in the spike" for name in runner.CHECKS if name not in only}
    fr = AnalysisFrames(frames)
    t0 = time.monotonic()
    try:
        out = runner._judged(fr, skip)
        return {n: out[n]["count"] for n in only}, time.monotonic() - t0
    finally:
        fr.release()


def measure(spark: Any, ab: ModuleType, label: str, run: Path, a: Any, bad: list[str]) -> Any:
    """(a) and (b) on one history, --repeat times; then (a) per group, (b)'s floors."""
    from kafka_trial.spark_analysis.read import prepare, read_frames, resolve
    from kafka_trial.spark_analysis.spark.sizing import analysis_sql, sql_settings

    hist = run / "history.jsonl"
    size, parts = hist.stat().st_size, spark.sparkContext.defaultParallelism
    one_task, settings = analysis_sql(spark, size, lambda: size)  # as job.py sizes it
    print(f"\n[{label}] {size >> 20} MiB, one task {one_task}; load average {os.getloadavg()}")
    spark.catalog.clearCache()
    prepared = prepare(hist, True)
    with sql_settings(spark, settings):
        frames, rows = read_frames(spark, resolve(run), prepared, one_task)
        flat, _, _ = rows.rows.count(), frames.sends.count(), frames.polled.count()
        if frames.maybe_unknown_txn or frames.rebalanced:
            bad.append(f"{label}: unknown txns or rebalances, which the kernel leaves out")
            return {}
        runs = []
        for rep in range(a.repeat):  # (a) first, then (b) first: neither always warms the other
            b = run_kernel(spark, frames, parts) if rep % 2 else {}
            counts, a_s = run_queries(frames, CHECKS)
            b = b or run_kernel(spark, frames, parts)
            runs.append((a_s, b["total_s"]))
            print(f"[{label}] run {rep + 1}: (a) {a_s:.1f} s, (b) {b['total_s']:.1f} s")
            for c in (c for c in CHECKS if counts[c] != b["counts"][c]):
                bad.append(f"{label}: {c}: queries {counts[c]}, kernel {b['counts'][c]}")
        print(f"[{label}] counts {counts}")
        diff = {c: n for c, n in b["alone"].items() if n != b["counts"][c]}
        print(f"[{label}] without the second pass the kernel would say {diff or 'the same'}")
        groups = {g: run_queries(frames, names)[1] for g, names in GROUPS.items()}
        floors = kernel_floors(spark, frames, parts)
    prepared.remove_temp()
    tree = ab._Sampler(os.getpid())  # peak RSS so far of this process, its JVM, its workers
    tree.sample(True)
    peaks = " ".join(f"{k.split(':')[0]}:{v:.0f}" for k, v in tree.snapshot()[1].items())
    out = {"label": label, "lines": sum(1 for _ in hist.open("rb")), "flat": flat, "run": run}
    return out | {"a_s": a_s, "b": b, "first": runs[0], "groups": groups, "floors": floors,
                  "peaks": peaks}  # fmt: skip


def whole_analysis(ab: ModuleType, run: Path) -> dict[str, Any]:
    """A cold `kafka-trial analyze` (no cache), as a user runs it."""
    ab._clear_run_outputs(run)
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "kafka_trial", "analyze", str(run)]
    subprocess.run(cmd, capture_output=True, check=False)  # exit 1: the planted anomalies
    res, wall = json.loads((run / "results.json").read_text()), time.monotonic() - t0
    counts = {c: res["anomalies"][c]["count"] for c in CHECKS}
    return {"wall_s": wall, "an": res["analysis"], "counts": counts}


def report(rows: list[dict[str, Any]], whole: dict[str, Any] | None) -> None:
    head = "size lines flat_rows (b)_rows (a)_s (b)_s a/b jvm_xchg+sort +arrow_empty coded"
    table = [[*head.split(), "(b)_pass", "kernel_cpu", "2nd_pass", "peak_RSS_MB"]]
    for r in rows:
        b, f, (a1, b1) = r["b"], r["floors"], r["first"]
        table.append([r["label"], str(r["lines"]), str(r["flat"]), str(b["rows_in"])])
        table[-1] += [f"{r['a_s']:.1f} ({a1:.1f})", f"{b['total_s']:.1f} ({b1:.1f})"]
        times = [r["a_s"] / b["total_s"], f["jvm_s"], f["arrow_s"], f["coded_s"], b["pass_s"]]
        times += [sum(b["cpu"].values()), b["second_s"]]
        table[-1] += [f"{x:.2f}" for x in times] + [r["peaks"]]
    print("\nseconds; (a) queries, (b) kernel pass + 2nd pass: last of --repeat runs (first)")
    widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
    for t in table:
        print("  ".join(c.rjust(w) for c, w in zip(t, widths, strict=True)))
    for r in rows:
        cpu = r["b"]["cpu"]
        each = ", ".join(f"{g} {s:.2f} vs {cpu[g]:.2f}" for g, s in r["groups"].items())
        print(f"[{r['label']}] per group, s, (a) alone vs (b)'s kernel CPU: {each}; ", end="")
        print(f"split {cpu['split']:.2f}; 2nd pass {r['b']['n2']} values")
    if whole and rows:
        an, r = whole["an"], rows[-1]
        total, checks = an["total_s"], an["stages_s"].get("checks", float("nan"))
        print(f"\n[{r['label']}] cold `kafka-trial analyze`: {whole['wall_s']:.1f} s wall, "
              f"total_s {total:.1f}, stages_s {an['stages_s']}")  # fmt: skip
        for k, v in {"(a)": r["a_s"], "(b)": r["b"]["total_s"]}.items():
            print(f"  8 checks {k} {v:.1f} s: {v / total:.0%} of total_s, {v / checks:.0%} checks")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100k,2M", help="generated histories' lines")
    ap.add_argument("--runs", default="", help="run directories to measure as well")
    ap.add_argument("--keep", type=Path, default=Path("/tmp/spike/hist"), help="histories here")
    ap.add_argument("--repeat", type=int, default=2, help="(a) then (b), this many times")
    ap.add_argument("--no-analyze", action="store_true", help="skip the cold analyze")
    a = ap.parse_args()
    ab = load_bench()
    print(allow_arrow_without_pandas())
    from kafka_trial.spark_analysis.spark.session import spark_session

    todo = [(Path(d).name, Path(d)) for d in a.runs.split(",") if d]
    for s in filter(None, a.sizes.split(",")):
        run, meta = ab.prepare(a.keep, ab.parse_size(s))
        todo.append((s, run))
        print(f"{s}: {meta['lines']} lines, planted {meta['expected']}")
    problems: list[str] = []
    spark = spark_session("local[*]")
    try:
        rows = [r for label, run in todo if (r := measure(spark, ab, label, run, a, problems))]
    finally:
        spark.stop()  # one Spark at a time: the cold analyze starts its own
    whole = whole_analysis(ab, rows[-1]["run"]) if rows and not a.no_analyze else None
    got = rows[-1]["b"]["counts"] if rows else {}
    for c, v in (whole or {}).get("counts", {}).items():
        if v != got[c]:
            problems.append(f"{rows[-1]['label']}: {c}: analyze {v}, kernel {got[c]}")
    report(rows, whole)
    print(f"load average at the end: {os.getloadavg()}")
    if problems:
        print("\n!!!!!!!! MISMATCHES !!!!!!!!\n  " + "\n  ".join(problems))
        return 1
    print("\nqueries, kernel (and the cold analyze, if run) agree on every count")
    return 0


if __name__ == "__main__":
    sys.exit(main())
