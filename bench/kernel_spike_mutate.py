"""A copy of a generated history with poll anomalies and cross-partition facts
planted, so that kernel_spike.py's poll checks and second pass see non-zero counts:

    python bench/kernel_spike_mutate.py SRC_RUN_DIR DST_RUN_DIR

SRC_RUN_DIR is one of analysis_bench.py's generated histories (e.g. lines-100k);
then `python bench/kernel_spike.py --runs DST_RUN_DIR` judges the copy both ways.
What it plants, with a fixed seed:
- A: the first two records of a partition swapped inside one consumer poll;
- B: a poll that starts by re-reading its process's previous record of a partition;
- C: two truncated (lost) values read by a consumer in another partition, far ahead;
- D, E: at an offset only reads know, every read returns another value (D: one whose
  only send failed; E: one acknowledged in another partition), and one poll that
  read k-1, k, k+1 drops k.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

Op = dict[str, Any]
Sends = dict[int, list[tuple[int, int | None, str | None]]]


def _is_poll(o: Op, drain: bool = False) -> bool:
    if o["type"] != "ok" or o["f"] != "poll":
        return False
    return (o["value"][0].get("role") == "drain") == drain


def _sends(ops: list[Op]) -> Sends:
    out: Sends = {}
    for o in ops:
        if o["type"] != "invoke" and o["f"] == "send" and isinstance(o["value"], list):
            for m in o["value"]:
                out.setdefault(m["value"], []).append(
                    (m["partition"], m.get("offset"), m.get("outcome"))
                )
    return out


def _swap_and_reread(ops: list[Op], polls: list[int], rng: random.Random, done: dict) -> None:
    for i in rng.sample(polls, len(polls)):
        recs = ops[i]["value"][0]["records"]
        if len(recs) >= 3 and recs[0]["partition"] == recs[1]["partition"] == recs[2]["partition"]:
            recs[0], recs[1] = recs[1], recs[0]
            done["A"] += 1
            if done["A"] == 3:
                break
    last: dict[tuple[Any, int], dict] = {}
    for i in polls:
        o = ops[i]
        recs = o["value"][0]["records"]
        key = (o["process"], recs[0]["partition"]) if recs else None
        if key in last and done["B"] < 3 and i % 7 == 0:
            recs.insert(0, dict(last[key]))
            done["B"] += 1
        for r in recs:
            last[(o["process"], r["partition"])] = r


def _lost_read_elsewhere(ops: list[Op], polls: list[int], sends: Sends, done: dict) -> list[int]:
    drain_end: dict[int, int] = {}
    for o in ops:
        if _is_poll(o, True):
            for e in o["value"][0].get("at_end", []):
                drain_end[e["partition"]] = e["offset"]
    lost = [
        v
        for v, s in sends.items()
        for p, off, out in s
        if out == "ok" and off is not None and off >= drain_end.get(p, 1 << 62)
    ]
    with_p1 = [i for i in polls if any(r["partition"] == 1 for r in ops[i]["value"][0]["records"])]
    for j, v in enumerate(lost[:2]):
        recs = ops[with_p1[len(with_p1) // 3 + j]]["value"][0]["records"]
        recs.append({"topic": "t", "partition": 1, "offset": 10_000_000 + j, "value": v})
        done["C"] += 1
    return lost[:2]


def _replace_read_only_offsets(ops: list[Op], polls: list[int], sends: Sends, done: dict) -> None:
    failed = [v for v, s in sends.items() if all(out == "fail" for _, _, out in s)]
    info = {v for v, s in sends.items() if all(out == "info" and off is None for _, off, out in s)}
    acked = [v for v, s in sends.items() if s[0][2] == "ok"]
    for kind, pick in (("D", failed), ("E", acked)):
        for i in polls:
            recs = ops[i]["value"][0]["records"]
            hit = [
                n
                for n in range(1, len(recs) - 1)
                if recs[n]["value"] in info
                and recs[n - 1]["partition"] == recs[n]["partition"] == recs[n + 1]["partition"]
            ]
            if not hit:
                continue
            r = recs[hit[0]]
            p, k = r["partition"], r["offset"]
            new = next(v for v in pick if all(pp != p for pp, _, _ in sends[v]))
            for o in ops:
                if o["type"] == "ok" and o["f"] == "poll":
                    for rr in o["value"][0]["records"]:
                        if rr["partition"] == p and rr["offset"] == k:
                            rr["value"] = new
            del recs[hit[0]]
            info.discard(r["value"])
            done[kind] += 1
            break


def mutate(src: Path, dst: Path) -> dict[str, int]:
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "spec.json", dst / "spec.json")
    ops = [json.loads(line) for line in (src / "history.jsonl").open()]
    polls = [i for i, o in enumerate(ops) if _is_poll(o)]
    sends = _sends(ops)
    done = dict.fromkeys("ABCDE", 0)
    _swap_and_reread(ops, polls, random.Random(7), done)
    lost = _lost_read_elsewhere(ops, polls, sends, done)
    _replace_read_only_offsets(ops, polls, sends, done)
    with (dst / "history.jsonl").open("w") as fh:
        for o in ops:
            fh.write(json.dumps(o, separators=(",", ":")) + "\n")
    print(done, "lost values read elsewhere:", lost)
    return done


if __name__ == "__main__":
    mutate(Path(sys.argv[1]), Path(sys.argv[2]))
