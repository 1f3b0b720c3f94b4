"""The Spark checks against tests/reference_checker.py on many random small histories.

Spark costs seconds per analysis, so one Hypothesis example is a batch of small
histories written into ONE history file (tests/random_histories.py: how they are
generated, laid out and told apart). Every check's rows are collected, not only the
examples results.json keeps, and compared per history as sets of keys.

KAFKA_TRIAL_DIFF_EXAMPLES=N runs N batches instead of the CI's few.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests import reference_checker as ref
from tests.random_histories import (
    APP_DRAIN,
    APP_GROUP,
    DRAIN,
    FOREIGN,
    OUT,
    PROCESS_SPAN,
    Op,
    history,
    spark_keys,
    txn_batch,
    write,
    write_txn_batch,
)

pytestmark = pytest.mark.filterwarnings("ignore")

# An analysis costs about the same for 200 histories as for 400 (its fixed cost is
# Spark's planning and scheduling): so the CI compares 800 in two batches, not four.
PER_BATCH = 400
EXAMPLES = int(os.environ.get("KAFKA_TRIAL_DIFF_EXAMPLES", "2"))


def spark_results(spark: Any, path: Path) -> dict[int, dict[str, set[Any]]]:
    """history -> check -> keys, from every row of the covered Spark checks, in one job."""
    from functools import reduce

    from kafka_trial.spark_analysis.checks.runner import tagged_checks
    from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
    from kafka_trial.spark_analysis.read.history_frames import load
    from pyspark.sql import DataFrame

    plan = AnalysisFrames(load(spark, str(path)))
    tagged = tagged_checks(plan, ref.CHECKED)
    rows = reduce(DataFrame.unionByName, tagged).collect()
    plan.release()
    out: dict[int, dict[str, set[Any]]] = defaultdict(lambda: defaultdict(set))
    for r in rows:
        # to_json leaves out null fields.
        row: dict[str, Any] = defaultdict(lambda: None, json.loads(r["detail"]))
        i, key = spark_keys(r["type"], row)
        out[i][r["type"]].add(key)
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
    # The drain read partition 0 to its end at 2: what the consumer read there and the
    # drain did not, vanished (2, and the foreign value at 3, beyond the end).
    assert got["vanished-read"] == {2, FOREIGN}


def test_reference_withdraws_a_drain_end_found_held_later(tmp_path: Path) -> None:
    """1 is acknowledged at offset 1, the drain found partition 0's end at 1 and then
    that end held below the high watermark 3 (an open transaction): unseen, not lost;
    its twin, whose hold came before the end, loses 1."""
    sends: Op = ("send", 0, [(0, 0, 0, "ok", False), (1, 0, 1, "ok", False)])
    end: Op = ("poll", 90, [(0, 0, 0)], "drain", {0: 1})
    hold: Op = ("poll", 90, [], "drain", {}, (), {0: 3})
    got = _reference_of([sends, end, hold], tmp_path / "planted")
    assert got["lost-write"] == set() and got["unseen"] == {1}
    twin = _reference_of([sends, hold, end], tmp_path / "twin")
    assert twin["lost-write"] == {1} and twin["unseen"] == set()


def _group_history(processed: list[int], outputs_read: list[int]) -> list[Op]:
    """Three values acknowledged in partition 0; the consumers' group and the copier
    both committed past 0 and 1."""
    return [
        ("send", 0, [(0, 0, 0, "ok", False), (1, 0, 1, "ok", False), (2, 0, 2, "ok", False)]),
        ("poll", 10, [(0, 0, 0), (1, 0, 1), (2, 0, 2)], None, {}),
        ("process", 10, [(v, 0, v) for v in processed]),
        ("offsets", 10, {0: 2}, "consumer"),
        ("txn", 1, [(-1, OUT, 0), (-2, OUT, 1)], "ok", None),  # the copier's outputs
        ("offsets", 1, {0: 2}, "copier"),
        ("poll", 90, [(0, 0, 0), (1, 0, 1), (2, 0, 2)], "drain", {0: 3}),
        ("poll", 90, [(-v - 1, OUT, v) for v in outputs_read], "drain", {}),
    ]


def test_reference_flags_what_groups_committed_past_and_never_handled(tmp_path: Path) -> None:
    """1 lies below both groups' committed offset 2: the consumers never processed it
    (group-missed) and no read returned the copier's output of it (eos-output-lost).
    Its twin processed it and read its output; 2 lies above both, unjudged."""
    got = _reference_of(_group_history([0], [0]), tmp_path / "planted")
    assert (got["group-missed"], got["eos-output-lost"]) == ({1}, {1})
    twin = _reference_of(_group_history([0, 1], [0, 1]), tmp_path / "twin")
    assert (twin["group-missed"], twin["eos-output-lost"]) == (set(), set())


def test_reference_flags_planted_transactional_and_group_anomalies(tmp_path: Path) -> None:
    """The classes issue 26 added to the model, each planted once."""
    planted: list[Op] = [
        # Ended info; the drain reads 10, so it committed, and 11 (partition 1) is gone.
        ("txn", 0, [(10, 0, 0), (11, 1, 0)], "info", None),
        # 12 and 13 of one op with 14 (read at 3) between them: an int-send-skip.
        ("send", 1, [(12, 0, 2, "ok", False), (13, 0, 4, "ok", False)]),
        ("send", 1, [(14, 0, None, "info", False)]),
        # One op, two poll micro-ops, reading on: nothing wrong.
        ("poll", 10, [(12, 0, 2), (14, 0, 3), (13, 0, 4)], None, {}, (2,)),
        ("process", 10, [(12, 0, 2), (14, 0, 3), (12, 0, 2)]),  # 12 handled twice
        ("txn", 0, [(-16, OUT, 0)], "ok", None),  # the copier's output of input 15
        ("poll", 90, [(10, 0, 0), (12, 0, 2), (14, 0, 3), (13, 0, 4)], "drain", {0: 5, 1: 2}),
        ("poll", 90, [(-16, OUT, 0), (-16, OUT, 2)], "drain", {OUT: 3}),  # copied twice
    ]
    got = _reference_of(planted, tmp_path / "planted")
    assert got["lost-write"] == {11} and got["unseen"] == set()
    assert len(got["torn-txn"]) == 1
    assert {(k[4], k[6]) for k in got["int-send-skip"]} == {(12, 13)}
    assert got["int-nonmonotonic-poll"] == set() and got["int-poll-skip"] == set()
    assert got["group-redelivered"] == {12}
    assert got["eos-output-duplicate"] == {15} and got["duplicate"] == {-16}


def test_reference_flags_planted_app_anomalies(tmp_path: Path) -> None:
    """The application on trial's classes, each planted once; its outputs (input ids)
    are no reads of the input's checks."""
    planted: list[Op] = [
        ("send", 0, [(0, 0, 0, "ok", False), (1, 0, 1, "ok", False), (2, 0, 2, "ok", False)]),
        ("offsets", APP_GROUP, {0: 3}),  # the app consumed all three
        # 1 before 0 (one key), 0 twice, an id nobody sent, one that is no id; 2 is gone.
        ("poll", APP_DRAIN, [(1, OUT, 0), (0, OUT, 1), (0, OUT, 2)], "app-output", {}, ()),
        ("poll", APP_DRAIN, [(FOREIGN, OUT, 3), (None, OUT, 4)], "app-output", {OUT: 5}, ()),
        ("poll", DRAIN, [(0, 0, 0), (1, 0, 1), (2, 0, 2)], "drain", {0: 3}),
    ]
    got = _reference_of(planted, tmp_path)
    assert got["app-output-lost"] == {2}
    assert got["app-output-duplicate"] == {0}
    assert got["app-output-unexpected"] == {FOREIGN}
    assert got["app-output-reorder"] == {("t0-out", 0, 1, 0, 0, 1)}
    assert {n: k for n, k in got.items() if k and not n.startswith("app-")} == {}


def test_the_generator_plants_every_covered_anomaly(tmp_path: Path) -> None:
    """Pure Python, over batches like the CI's: the reference flags every covered
    check, so no check's agreement with Spark is vacuous."""
    flagged: dict[str, int] = dict.fromkeys(ref.CHECKED, 0)
    for seed in range(3):
        path = tmp_path / f"{seed}.jsonl"
        write([history(seed, i) for i in range(PER_BATCH)], path)
        for keys in reference_results(path).values():
            for name in ref.CHECKED:
                flagged[name] += len(keys[name])
    assert all(flagged.values()), flagged


# ---------------------------------------------------------------- dependency cycles
#
# The cycle checks (G0, G1c, G1c-process, G1c-realtime) against the reference's plain
# Tarjan on random transactional histories (tests/txn_histories.py: a read_committed
# model that interleaves writes, a third of them with a planted cycle), written into
# one history file as above. Per history and type, the components must be the same
# ({lowest op: (ops, shortest cycle length)}), and every step of every Spark witness
# must be an edge of the reference's graph. Realtime edges run from each history to
# the next in the file, but no wr edge runs back, so no cycle spans two histories.


def spark_cycles(spark: Any, path: Path) -> dict[int, dict[str, dict[int, Any]]]:
    """history -> type -> lowest op -> (ops, length, steps), every component witnessed."""
    from kafka_trial.spark_analysis.checks.runner import CHECKS
    from kafka_trial.spark_analysis.cycles import edges as checks_cycles
    from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
    from kafka_trial.spark_analysis.read.history_frames import load

    plan = AnalysisFrames(load(spark, str(path)))
    saved, checks_cycles.WITNESSED = checks_cycles.WITNESSED, 10**6
    try:
        out: dict[int, dict[str, dict[int, Any]]] = defaultdict(lambda: defaultdict(dict))
        for name in ref.CYCLE_CHECKED:
            for r in CHECKS[name][0](plan).collect():
                steps = [(s["from_op"], s["to_op"], s["kind"]) for s in r["steps"]]
                i = int(r["steps"][0]["from_process"]) // PROCESS_SPAN
                out[i][name][r["first_op"]] = (r["ops"], r["length"], steps)
        return out
    finally:
        checks_cycles.WITNESSED = saved
        plan.release()


def cycle_disagreements(spark: Any, batch: list[list[Any]], path: Path) -> list[str]:
    write_txn_batch(batch, path)
    got = spark_cycles(spark, path)
    by_history: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        op = json.loads(line)
        by_history[op["process"] // PROCESS_SPAN].append(op)
    out = []
    for i, ops in by_history.items():
        want, graph = ref.cycles(ops), ref.cycle_graph(ops)
        for name in ref.CYCLE_CHECKED:
            mine = got.get(i, {}).get(name, {})
            CYCLES_FLAGGED[name] += len(want[name])
            if {k: v[:2] for k, v in mine.items()} != want[name]:
                out.append(f"history {i} {name}: Spark {mine}, reference {want[name]}")
            for _, _, steps in mine.values():
                bad = [s for s in steps if s[2] not in graph.edges.get(s[:2], set())]
                ends = zip(steps, steps[1:] + steps[:1], strict=True)
                if bad or any(a[1] != b[0] for a, b in ends):
                    out.append(f"history {i} {name}: witness {steps} is no cycle of its edges")
    return out


CYCLES_FLAGGED: dict[str, int] = dict.fromkeys(ref.CYCLE_CHECKED, 0)


@settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=max(1, EXAMPLES // 2),  # 120 histories a batch
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=list(HealthCheck),
)
@given(seed=st.integers(0, 2**32))
def test_spark_cycles_agree_with_the_reference(spark: Any, seed: int) -> None:
    batch = txn_batch(seed)
    with tempfile.TemporaryDirectory() as d:
        found = cycle_disagreements(spark, batch, Path(d) / "history.jsonl")
    print(f"differential cycles: flagged {CYCLES_FLAGGED}")
    assert not found, "\n".join(found[:10])
    # The batch compared something of each kind: the plants and the model's G0s.
    assert all(CYCLES_FLAGGED.values()), CYCLES_FLAGGED
