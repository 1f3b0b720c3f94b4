"""Benchmark: what the dependency-cycle checks (G0, G1c, G1c-process, G1c-realtime)
cost on transactional histories whose transactions read, at the default driver
memory.

    python bench/cycles_bench.py [--sizes 2M,10M] [--keep DIR]

For each size it writes a history of transactional producers: each transaction
sends to one to three partitions and polls one (read_committed, from where that
process left off), with two to four transactions open at once whose writes land
interleaved (so some writes cross: G0, allowed), a few planted pairs that read each
other's write (G1c, forbidden, each one component of two ops), and aborted
transactions whose records the readers skip; then a final drain reads every
partition to its end. Then, each in a fresh process (cold JVM, like `kafka-trial
analyze`):

- `analyze`, with the peak RSS of its process tree and the JVM's -Xmx;
- the yardstick: the same `analyze` with the four cycle checks answering nothing, as
  the checks stood before them.

It prints the ratio, the cycle counts against the planted G1c, and the graph the
driver searched (edges built, pruning rounds in Spark, edges left for the driver).
A G1c count other than the planted one is printed loudly and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analysis_bench import parse_size, run_child, size_label

SEED = 20261125
PARTITIONS = 6
PRODUCERS = 8
G1C_PER_100K = 4
DRAIN_BATCH = 500


class TxnGen:
    """Writes the history by plain string formatting. Each partition's log is a list
    of (value, committed) with None for a transaction marker; reads and the drain are
    derived from it, so the planted G1c pairs are the only forbidden anomaly."""

    def __init__(self, fh: TextIO, seed: int = SEED) -> None:
        self.fh = fh
        self.rng = random.Random(seed)
        self.lines = 0
        self.value = 0
        self.buf: list[str] = []
        self.logs: list[list[int | None]] = [[] for _ in range(PARTITIONS)]
        # Offsets of committed records per partition: what read_committed returns.
        self.visible: list[list[int]] = [[] for _ in range(PARTITIONS)]
        self.pos = [[0] * PARTITIONS for _ in range(PRODUCERS)]
        self.planted_g1c = 0

    def _emit(self, type_: str, process: int, f: str, value: str) -> None:
        self.buf.append(
            f'{{"index":{self.lines},"time":{self.lines * 1000},"type":"{type_}",'
            f'"process":{process},"f":"{f}","value":{value}}}\n'
        )
        self.lines += 1
        if len(self.buf) >= 4096:
            self.fh.write("".join(self.buf))
            self.buf.clear()

    def _next_value(self) -> int:
        self.value += 1
        return self.value

    @staticmethod
    def _rec(p: int, off: int, v: int) -> str:
        return f'{{"topic":"t","partition":{p},"offset":{off},"value":{v}}}'

    def _poll(self, proc: int, q: int) -> list[tuple[int, int]]:
        """Up to 3 committed records of partition q from where proc left off."""
        vis = self.visible[q]
        start = self.pos[proc][q]
        # Records are visible in offset order: find the first at or past start.
        lo, hi = 0, len(vis)
        while lo < hi:
            mid = (lo + hi) // 2
            if vis[mid] < start:
                lo = mid + 1
            else:
                hi = mid
        got = [(off, self.logs[q][off]) for off in vis[lo : lo + 3]]
        if got:
            self.pos[proc][q] = got[-1][0] + 1
        return got  # type: ignore[return-value]

    def round(self, plant: bool) -> None:
        procs = self.rng.sample(range(PRODUCERS), self.rng.randint(2, 4))
        txns = []
        for proc in procs:
            parts = self.rng.sample(range(PARTITIONS), self.rng.randint(1, 3))
            sends = [(p, self._next_value()) for p in parts]
            q = self.rng.randrange(PARTITIONS)
            ok = self.rng.random() >= 0.05
            txns.append({"proc": proc, "sends": sends, "q": q, "ok": ok, "reads": None})
        if plant:
            # Two transactions that each read the other's write (read before commit).
            a, b = txns[0], txns[1]
            a["sends"], b["sends"] = a["sends"][:1], b["sends"][:1]
            if a["sends"][0][0] == b["sends"][0][0]:
                b["sends"] = [((a["sends"][0][0] + 1) % PARTITIONS, b["sends"][0][1])]
            a["ok"] = b["ok"] = True
            self.planted_g1c += 1
        for t in txns:
            micro = [
                f'{{"op":"send","topic":"t","partition":{p},"value":{v}}}' for p, v in t["sends"]
            ]
            self._emit("invoke", t["proc"], "txn", "[" + ",".join([*micro, '{"op":"poll"}']) + "]")
        for t in txns:
            t["reads"] = self._poll(t["proc"], t["q"])
        # The writes land interleaved: per partition, in a random order of the txns.
        offsets: dict[int, int] = {}
        order = list(range(len(txns)))
        for p in range(PARTITIONS):
            self.rng.shuffle(order)
            for i in order:
                for pp, v in txns[i]["sends"]:
                    if pp == p:
                        offsets[v] = len(self.logs[p])
                        self.logs[p].append(v)
        if plant:
            (pa, va), (pb, vb) = txns[0]["sends"][0], txns[1]["sends"][0]
            txns[0]["q"], txns[0]["reads"] = pb, [(offsets[vb], vb)]
            txns[1]["q"], txns[1]["reads"] = pa, [(offsets[va], va)]
        committed: list[list[int]] = [[] for _ in range(PARTITIONS)]
        for t in txns:
            for p in {p for p, _ in t["sends"]}:
                self.logs[p].append(None)  # the commit or abort marker
            if t["ok"]:
                for p, v in t["sends"]:
                    committed[p].append(offsets[v])
        for p in range(PARTITIONS):  # this round's offsets all lie past the earlier ones
            self.visible[p].extend(sorted(committed[p]))
        self.rng.shuffle(txns)
        for t in txns:
            out = "ok" if t["ok"] else "fail"
            micro = [
                f'{{"op":"send","topic":"t","partition":{p},"value":{v},'
                f'"offset":{offsets[v]},"outcome":"{out}"}}'
                for p, v in t["sends"]
            ]
            recs = ",".join(self._rec(t["q"], off, v) for off, v in t["reads"])
            micro.append(f'{{"op":"poll","records":[{recs}]}}')
            self._emit(out, t["proc"], "txn", "[" + ",".join(micro) + "]")

    def drain(self) -> None:
        proc = PRODUCERS + 1
        for p in range(PARTITIONS):
            vis = self.visible[p]
            for i in range(0, max(len(vis), 1), DRAIN_BATCH):
                chunk = vis[i : i + DRAIN_BATCH]
                recs = ",".join(self._rec(p, off, self.logs[p][off]) for off in chunk)  # type: ignore[arg-type]
                end = ""
                if i + DRAIN_BATCH >= len(vis):
                    at = f'{{"topic":"t","partition":{p},"offset":{len(self.logs[p])}}}'
                    end = f',"at_end":[{at}]'
                self._emit("invoke", proc, "poll", '[{"op":"poll","role":"drain"}]')
                self._emit(
                    "ok", proc, "poll", f'[{{"op":"poll","role":"drain","records":[{recs}]{end}}}]'
                )

    def run(self, lines: int) -> None:
        drain_lines = 2 * (lines // 30 // DRAIN_BATCH + PARTITIONS)  # ~1.3 sends per line
        every = max(1, 100_000 // G1C_PER_100K // 6)  # a round is ~6 lines
        n = 0
        while self.lines < lines - drain_lines:
            self.round(plant=n % every == every // 2)
            n += 1
        self.drain()
        self.fh.write("".join(self.buf))
        self.buf.clear()


def prepare(base: Path, n: int) -> tuple[Path, dict[str, Any]]:
    from kafka_trial.harness.spec import RunSpec

    run = base / f"txn-lines-{size_label(n)}"
    meta_p = run / "bench_meta.json"
    if meta_p.is_file() and json.loads(meta_p.read_text()).get("target") == n:
        return run, json.loads(meta_p.read_text())
    run.mkdir(parents=True, exist_ok=True)
    (run / "spec.json").write_text(RunSpec().to_json())
    t0 = time.monotonic()
    with (run / "history.jsonl").open("w", buffering=1 << 20) as fh:
        gen = TxnGen(fh)
        gen.run(n)
    meta = {
        "target": n,
        "lines": gen.lines,
        "g1c": gen.planted_g1c,
        "gen_s": round(time.monotonic() - t0, 1),
    }
    meta_p.write_text(json.dumps(meta))
    return run, meta


# --- children ----------------------------------------------------------------------


def _child(run: Path, cycles: bool) -> dict[str, Any]:
    from kafka_trial.spark_analysis.cycles import edges as cc
    from kafka_trial.spark_analysis.job import analyze

    stats: dict[str, Any] = {}
    if cycles:
        driver_edges = cc._driver_edges

        def counted(graph: Any) -> Any:
            t0 = time.monotonic()
            out = driver_edges(graph)
            stats.update(out[1], to_driver_s=round(time.monotonic() - t0, 1))
            return out

        cc._driver_edges = counted  # type: ignore[assignment]
    else:
        # The checks as they stood before the cycle search: the four answer nothing.
        def nothing(fr: Any) -> Any:
            return fr.ops.sparkSession.createDataFrame([], cc._ROW)

        cc._find = nothing  # type: ignore[assignment]
    t0 = time.monotonic()
    res = analyze(run)
    return {
        "cold_end_epoch": time.time(),
        "total_s": time.monotonic() - t0,
        "counts": {k: v.get("count") for k, v in res["anomalies"].items() if v.get("count")},
        "valid": res["valid"],
        "graph": stats,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2M,10M", help="history lines, e.g. 100k,2M,10M")
    ap.add_argument("--keep", type=Path, help="write (and reuse) the histories under DIR")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="kt-cycles-bench-"))
    bad = 0
    rows = []
    for n in [parse_size(s) for s in args.sizes.split(",")]:
        run, meta = prepare(base, n)
        mb = (run / "history.jsonl").stat().st_size / 1e6
        print(f"\n[{size_label(n)}] {meta['lines']} lines, {mb:.0f} MB, planted G1c {meta['g1c']}")
        with_c = run_child(["_cycles", str(run), "on"], script=__file__)
        without = run_child(["_cycles", str(run), "off"], script=__file__)
        for name, m in (("with cycles", with_c), ("without (yardstick)", without)):
            print(
                f"  {name}: {m.wall_s:.1f} s, peak RSS {m.tree_peak_mb:.0f} MB, "
                f"-Xmx {m.jvm_xmx or 'default'}, {'ok' if m.ok else 'FAILED'}"
            )
            if not m.ok:
                print(m.stderr_tail)
                bad += 1
        c = with_c.result.get("counts", {})
        print(f"  counts: {c}; graph: {with_c.result.get('graph')}")
        if c.get("G1c", 0) != meta["g1c"]:
            print(f"  !! G1c = {c.get('G1c', 0)}, planted {meta['g1c']}")
            bad += 1
        ratio = with_c.wall_s / without.wall_s if without.wall_s else float("nan")
        print(f"  cycles cost: {ratio:.2f}x the checks without them")
        rows.append((size_label(n), meta["lines"], mb, with_c, without, ratio))
    print("\n| lines | MB | with cycles | without | ratio | peak RSS | G0 | G1c (planted) |")
    print("|---|---|---|---|---|---|---|---|")
    for label, _, mb, w, wo, ratio in rows:
        c = w.result.get("counts", {})
        print(
            f"| {label} | {mb:.0f} | {w.wall_s:.1f} s | {wo.wall_s:.1f} s | {ratio:.2f}x | "
            f"{w.tree_peak_mb:.0f} MB | {c.get('G0', 0)} | {c.get('G1c', 0)} |"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_cycles":
        out = _child(Path(sys.argv[2]), sys.argv[3] == "on")
        print("BENCH_JSON " + json.dumps(out, default=str), flush=True)
    else:
        sys.exit(main())
