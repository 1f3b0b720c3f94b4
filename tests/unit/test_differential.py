"""The Spark checks against tests/reference_checker.py on many random small histories.

Spark costs seconds per analysis, so one Hypothesis example is a batch of small
histories written into ONE history file: history i has topic f"t{i}", processes
i*100 + k and values i*10_000 + k, so every anomaly row goes back to its history
by its topic (or its value). Every check's rows are collected, not only the
examples results.json keeps, and compared per history as sets of keys.

The generator models assign-mode consumers of a few partitions (no rebalances, no
transactions): writers whose sends are ok, fail or info (with resends of values an
earlier op left info), a log that sometimes misbehaves (a reported offset that is
not where the value went, a duplicated append, a foreign value, an unacknowledged
value that lands anyway), consumers that sometimes step back or reorder a batch,
and the final drain (role "drain", at_end where it read a partition to the end),
which sometimes stops early and sometimes finds its partition truncated below
acknowledged offsets.

KAFKA_TRIAL_DIFF_EXAMPLES=N runs N batches instead of the CI's few.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from kafka_trial.contracts.history import HistoryWriter

from tests import reference_checker as ref

pytestmark = pytest.mark.filterwarnings("ignore")

PER_BATCH = 200
EXAMPLES = int(os.environ.get("KAFKA_TRIAL_DIFF_EXAMPLES", "4"))
VALUE_SPAN = 10_000
PROCESS_SPAN = 100
FOREIGN = 9_000  # relative values at or above this are never sent

# One abstract history: ("send", proc, [(value, partition, offset, outcome, resend)]),
# ("open", proc, sends) for a send op with no completion, or
# ("poll", proc, [(value, partition, offset)], role, {partition: end}), with
# processes and values relative to the history's own ranges.
Op = tuple[Any, ...]


def history(seed: int, i: int) -> list[Op]:
    """One random history. Hypothesis draws only the seed: 200 histories of decisions
    drawn one by one would overrun its buffer, leaving only the empty minimal batch."""
    rng = random.Random(f"{seed}/{i}")
    n_parts = rng.randint(1, 3)
    writers = list(range(rng.randint(1, 3)))
    consumers = [10 + c for c in range(rng.randint(0, 2))]
    log: dict[int, list[int]] = {p: [] for p in range(n_parts)}
    position: dict[tuple[int, int], int] = {}
    left_info: list[int] = []
    next_value = 0
    ops: list[Op] = []
    faulty = rng.random() < 0.5  # half the histories keep to the rules

    def fault(weight: int) -> bool:
        return faulty and rng.randrange(weight) == 0

    for _ in range(rng.randint(0, 10)):
        if consumers and rng.randrange(2) == 0:
            proc = rng.choice(consumers)
            records: list[tuple[int, int, int]] = []
            for p in sorted(rng.sample(range(n_parts), rng.randint(1, n_parts))):
                start = position.get((proc, p), 0)
                if fault(6):
                    start = max(0, start - rng.randint(1, 3))  # steps back
                if fault(8):
                    start += 1  # skips one
                end = min(len(log[p]), start + rng.randint(0, 3))
                batch = [(log[p][o], p, o) for o in range(start, end)]
                if fault(6):
                    rng.shuffle(batch)
                if batch and fault(15):
                    _, bp, bo = batch[0]
                    batch[0] = (None, bp, bo)  # a record whose value did not decode
                records += batch
                position[(proc, p)] = max(end, start)
            ops.append(("poll", proc, records, None, {}))
            continue
        proc = rng.choice(writers)
        sends = []
        for _ in range(rng.randint(1, 3)):
            resend = bool(left_info) and rng.randrange(5) == 0
            if resend:
                value = rng.choice(left_info)
            else:
                value, next_value = next_value, next_value + 1
            p = rng.randrange(n_parts)
            outcome = rng.choice(["ok", "ok", "ok", "info", "fail"])
            offset: int | None = None
            if outcome == "ok":
                offset = len(log[p])
                if fault(5):
                    offset = rng.randint(0, len(log[p]) + 2)  # not where it went
                elif fault(10):
                    offset = None  # acks=0
                log[p].append(value)
                if fault(10):
                    log[p].append(value)  # a duplicated append
            elif outcome == "info":
                left_info.append(value)
                if rng.random() < 0.5:
                    log[p].append(value)
            elif fault(4):
                log[p].append(value)  # a failed send that was written
            if fault(12):
                log[p].append(FOREIGN + rng.randrange(100))
            sends.append((value, p, offset, outcome, resend))
        ops.append(("send", proc, sends))
    if rng.randrange(8) == 0:
        # The history was cut off during a send: its invoke has no completion.
        v = next_value
        ops.append(
            ("open", rng.choice(writers), [(v, rng.randrange(n_parts), None, "info", False)])
        )
        for p in range(n_parts):
            if rng.random() < 0.5:
                log[p].append(v)
    # The final drain, after all other ops.
    if rng.random() < 0.7:
        drain_records: list[tuple[int, int, int]] = []
        ends: dict[int, int] = {}
        for p in range(n_parts):
            length = len(log[p])
            if fault(4):
                length = rng.randint(0, length)  # truncated
            if rng.randrange(5) == 0:
                stop = rng.randint(0, length)  # stops early: no end known
            else:
                stop = length
                ends[p] = length
            drain_records += [(log[p][o], p, o) for o in range(stop)]
        # One or two drain polls; the end markers come with the last.
        cut = rng.randint(0, len(drain_records))
        if cut:
            # At the end once already, before more records arrived: the later end counts.
            early = {p: o + 1 for _, p, o in drain_records[:cut] if rng.randrange(3) == 0}
            ops.append(("poll", 90, drain_records[:cut], "drain", early))
        ops.append(("poll", 90, drain_records[cut:], "drain", ends))
    return ops


def micro(topic: str, value: int, p: int, resend: bool) -> dict[str, Any]:
    m: dict[str, Any] = {"op": "send", "topic": topic, "partition": p, "value": value}
    return {**m, "resend": True} if resend else m


def invoked(
    i: int, proc: int, sends: list[Any], seqs: dict[int, itertools.count[int]]
) -> list[dict[str, Any]]:
    """The send micro-ops of history i's process `proc` as invoked."""
    topic, vbase = f"t{i}", i * VALUE_SPAN
    out = [micro(topic, vbase + v, p, r) for v, p, _, _, r in sends]
    if i % 4 == 3:
        return out
    client = i * 10 + (proc - i * PROCESS_SPAN) % 2
    return [{**m, "client": client, "seq": next(seqs[client])} for m in out]


def write(batch: list[list[Op]], path: Path) -> None:
    """All histories of the batch, one after the other, into one history file.

    Writers 0 and 2 share a producer client, writer 1 has its own; each client
    numbers its sends in invoke order (`seq`). Every fourth history records no
    clients, as another tool's might."""
    h = HistoryWriter(path)
    for i, ops in enumerate(batch):
        topic, vbase, pbase = f"t{i}", i * VALUE_SPAN, i * PROCESS_SPAN
        seqs: dict[int, itertools.count[int]] = defaultdict(itertools.count)
        for op in ops:
            proc = pbase + op[1]
            if op[0] == "open":
                h.invoke(proc, "send", invoked(i, proc, op[2], seqs))
            elif op[0] == "send":
                sends = op[2]
                asked = invoked(i, proc, sends, seqs)
                h.invoke(proc, "send", asked)
                outcomes = {o for _, _, _, o, _ in sends}
                h.complete(
                    outcomes.pop() if len(outcomes) == 1 else "info",
                    proc,
                    "send",
                    [
                        {**m, "offset": off, "outcome": o}
                        for m, (_, _, off, o, _) in zip(asked, sends, strict=True)
                    ],
                )
            else:
                _, _, records, role, ends = op
                m = {"op": "poll"} if role is None else {"op": "poll", "role": role}
                h.invoke(proc, "poll", [m])
                done: dict[str, Any] = {
                    **m,
                    "records": [
                        {
                            "topic": topic,
                            "partition": p,
                            "offset": o,
                            "value": None if v is None else vbase + v,
                        }
                        for v, p, o in records
                    ],
                }
                if ends:
                    done["at_end"] = [
                        {"topic": topic, "partition": p, "offset": e} for p, e in ends.items()
                    ]
                h.complete("ok", proc, "poll", [done])
    h.close()


def _history_of_topic(topic: str) -> int:
    return int(topic[1:])


def spark_keys(name: str, row: dict[str, Any]) -> tuple[int, Any]:
    """(history, key) of one Spark anomaly row, the key shaped as reference_checker's."""
    if name == "unexpected" and row.get("value") is None:
        return _history_of_topic(row["topic"]), ("undecodable", row["partition"], row["offset"])
    if name in ("lost-write", "unseen", "duplicate", "unexpected", "aborted-read"):
        return row["value"] // VALUE_SPAN, row["value"]
    t, p = row["topic"], row["partition"]
    i = _history_of_topic(t)
    if name == "inconsistent-offsets":
        return i, (t, p, row["offset"])
    if name == "reorder":
        return i, (
            row["process"],
            t,
            p,
            row["prev_value"],
            row["prev_offset"],
            row["value"],
            row["offset"],
        )
    if name == "client-reorder":
        return i, (
            row["client"],
            t,
            p,
            row["prev_value"],
            row["prev_offset"],
            row["value"],
            row["offset"],
        )
    if name == "int-nonmonotonic-send":
        return i, (
            row["index"],
            row["process"],
            t,
            p,
            row["prev_value"],
            row["prev_offset"],
            row["value"],
            row["offset"],
        )
    if name == "nonmonotonic-poll":
        return i, (
            row["process"],
            t,
            p,
            row["prev_index"],
            row["prev_offset"],
            row["prev_value"],
            row["index"],
            row["offset"],
            row["value"],
        )
    if name == "int-nonmonotonic-poll":
        return i, (
            row["index"],
            row["process"],
            t,
            p,
            row["prev_offset"],
            row["prev_value"],
            row["offset"],
            row["value"],
        )
    raise KeyError(name)


def spark_results(spark: Any, path: Path) -> dict[int, dict[str, set[Any]]]:
    """history -> check -> keys, from every row of the covered Spark checks, in one job."""
    from functools import reduce

    from kafka_trial.spark_analysis.history_frames import load
    from kafka_trial.spark_analysis.queue_checks import CHECKS
    from kafka_trial.spark_analysis.shared_frames import Plan
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    plan = Plan(load(spark, str(path)))
    tagged = [
        CHECKS[name][0](plan).select(
            F.lit(name).alias("check"), F.to_json(F.struct("*")).alias("row")
        )
        for name in ref.CHECKED
    ]
    rows = reduce(DataFrame.unionByName, tagged).collect()
    plan.release()
    out: dict[int, dict[str, set[Any]]] = defaultdict(lambda: defaultdict(set))
    for r in rows:
        # to_json leaves out null fields.
        row: dict[str, Any] = defaultdict(lambda: None, json.loads(r["row"]))
        i, key = spark_keys(r["check"], row)
        out[i][r["check"]].add(key)
    return out


def reference_results(path: Path) -> dict[int, dict[str, set[Any]]]:
    by_history: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        op = json.loads(line)
        by_history[op["process"] // PROCESS_SPAN].append(op)
    return {i: ref.check(ops) for i, ops in by_history.items()}


def disagreements(spark: Any, batch: list[list[Op]], path: Path) -> list[str]:
    write(batch, path)
    got, want = spark_results(spark, path), reference_results(path)
    out = []
    for i in range(len(batch)):
        for name in ref.CHECKED:
            s = got.get(i, {}).get(name, set())
            r = want.get(i, {}).get(name, set())
            FLAGGED[name] += len(r)
            if s != r:
                out.append(
                    f"history {i} {name}: only Spark {sorted(s - r, key=repr)}, "
                    f"only reference {sorted(r - s, key=repr)}\n  ops: {batch[i]}"
                )
    return out


STATS = {"histories": 0, "batches": 0, "seconds": 0.0}
# Keys each check flagged over all batches (the reference's): a generator that
# never plants some anomaly would compare nothing for that check.
FLAGGED: dict[str, int] = dict.fromkeys(ref.CHECKED, 0)


# No shrinking: each run costs a Spark analysis, and the disagreeing histories are
# small already, printed one by one.
@settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=EXAMPLES,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=list(HealthCheck),
)
@given(seed=st.integers(0, 2**32))
def test_spark_agrees_with_reference(spark: Any, seed: int) -> None:
    t0 = time.monotonic()
    batch = [history(seed, i) for i in range(PER_BATCH)]
    with tempfile.TemporaryDirectory() as d:
        found = disagreements(spark, batch, Path(d) / "history.jsonl")
    STATS["histories"] += len(batch)
    STATS["batches"] += 1
    STATS["seconds"] += time.monotonic() - t0
    print(f"differential: {STATS} flagged: {FLAGGED}")
    assert not found, "\n".join(found[:10])


def _reference_of(ops: list[Op], tmp: Path) -> dict[str, set[Any]]:
    path = tmp / "history.jsonl"
    write([ops], path)
    return reference_results(path)[0]


def test_reference_flags_planted_anomalies(tmp_path: Path) -> None:
    """The reference is no vacuous twin: each planted anomaly is flagged, and the
    clean history beside it flags nothing."""
    clean: list[Op] = [
        ("send", 0, [(0, 0, 0, "ok", False), (1, 0, 1, "ok", False)]),
        ("poll", 10, [(0, 0, 0)], None, {}),
        ("poll", 10, [(1, 0, 1)], None, {}),
        ("poll", 90, [(0, 0, 0), (1, 0, 1)], "drain", {0: 2}),
    ]
    assert _reference_of(clean, tmp_path / "clean") == {n: set() for n in ref.CHECKED}
    planted: list[Op] = [
        # 1 lands below 0: reorder within the op; 2 failed but is read; 3 is truncated.
        ("send", 0, [(0, 0, 1, "ok", False), (1, 0, 0, "ok", False)]),
        ("send", 0, [(2, 0, None, "fail", False), (3, 0, 4, "ok", False)]),
        # Writers 2 and 0 share a client: 4 was produced first, 5 landed below it.
        ("send", 2, [(4, 1, 1, "ok", False)]),
        ("send", 0, [(5, 1, 0, "ok", False)]),
        ("poll", 10, [(1, 0, 0), (0, 0, 1)], None, {}),
        # Offset 1 again (now holding 2: 0 was read there too), then 0 at offset 2.
        ("poll", 10, [(2, 0, 1), (0, 0, 2), (FOREIGN, 0, 3)], None, {}),
        ("poll", 90, [(1, 0, 0), (0, 0, 1), (5, 1, 0), (4, 1, 1)], "drain", {0: 2, 1: 2}),
    ]
    got = _reference_of(planted, tmp_path / "planted")
    assert got["lost-write"] == {3}
    assert got["unseen"] == set()
    assert got["duplicate"] == {0}
    assert got["inconsistent-offsets"] == {("t0", 0, 1)}
    assert got["unexpected"] == {FOREIGN}
    assert got["aborted-read"] == {2}
    assert {k[3:] for k in got["reorder"]} == {(0, 1, 1, 0)}
    assert len(got["int-nonmonotonic-send"]) == 1
    # The reorder within writer 0's op, and the pair of ops of two processes.
    assert {k[3:] for k in got["client-reorder"]} == {(0, 1, 1, 0), (4, 1, 5, 0)}
    assert {(k[4], k[7]) for k in got["nonmonotonic-poll"]} == {(1, 1)}
    assert got["int-nonmonotonic-poll"] == set()
