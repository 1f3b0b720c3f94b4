"""Dependency cycles (G0, G1c, G1c-process, G1c-realtime): the driver's components and
witnesses against the plain reference on random graphs, the reference against
planted cycles and their acyclic twins on random transactional histories, planted
histories through Spark, the verdict (G0 allowed by default), and the witness in
words."""

from __future__ import annotations

import itertools
import random
import xml.etree.ElementTree as ET
from array import array
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kafka_trial.checkers.verdict import decide
from kafka_trial.spark_analysis.cycles import graph as cg
from kafka_trial.spark_analysis.cycles.graph import (
    CHAIN,
    PROCESS,
    RT_IN,
    RT_OUT,
    SPECS,
    WR,
    WW,
    components,
    pack,
)

from tests import reference_checker as ref
from tests import txn_histories as th
from tests.batched import Cases, Judged, judged_fixture
from tests.histories import Builder, rec, send

CYCLES = ("G0", "G1c", "G1c-process", "G1c-realtime")
KIND_OF = {"ww": WW, "wr": WR, "process": PROCESS, "realtime": RT_OUT}


# ---------------------------------------------------------------- driver vs reference


def _graph(rng: random.Random) -> tuple[ref.CycleGraph, array, int]:
    """Random ops with invoke and completion lines, random ww, wr and process edges,
    and the realtime edges they imply: as the reference holds them (every pair) and
    as the Spark job hands them to the driver (through a chain of events)."""
    n = rng.randint(2, 7)
    lines = rng.sample(range(4 * n), 2 * n)
    ops: dict[int, ref.CycleOp] = {}
    for i in range(n):
        inv, done = sorted(lines[2 * i : 2 * i + 2])
        ok = rng.random() < 0.85
        ops[done] = ref.CycleOp(done, str(i % 3), "txn", "ok" if ok else "info", inv, done)
    ids = sorted(ops)
    edges: dict[tuple[int, int], set[str]] = {}
    for _ in range(rng.randint(0, 3 * n)):
        a, b = rng.sample(ids, 2)
        edges.setdefault((a, b), set()).add(rng.choice(["ww", "wr", "wr", "process"]))
    readers = {b for (a, b), ks in edges.items() if "wr" in ks and ops[b].type == "ok"}
    writers = {a for (a, b), ks in edges.items() if "wr" in ks}
    for a in readers:
        for b in writers:
            if ops[a].done is not None and ops[a].done < ops[b].inv:  # type: ignore[operator]
                edges.setdefault((a, b), set()).add("realtime")
    base = 4 * n + 1
    packed = array("q")
    for (a, b), ks in edges.items():
        packed.extend(pack(a, b, KIND_OF[k]) for k in ks if k != "realtime")
    outs = [(a, base + ops[a].done) for a in readers]  # type: ignore[operator]
    ins = [(base + ops[b].inv, b) for b in writers]
    packed.extend(pack(a, e, RT_OUT) for a, e in outs)
    packed.extend(pack(e, b, RT_IN) for e, b in ins)
    events = sorted({e for _, e in outs} | {e for e, _ in ins})
    packed.extend(pack(x, y, CHAIN) for x, y in itertools.pairwise(events))
    return ref.CycleGraph(ops, edges), packed, base


def _check_witness(g: ref.CycleGraph, spec: cg.CycleSpec, steps: Any) -> None:
    """Each step an edge of the reference's of its kind, the steps a closed walk
    that passes no op twice, and the required kind taken."""
    names = {v: k for k, v in KIND_OF.items()}
    for (u, v, kind), (nu, _, _) in zip(steps, [*steps[1:], steps[0]], strict=True):
        assert names[kind] in g.edges.get((u, v), set()), (u, v, kind)
        assert v == nu
    assert len({u for u, _, _ in steps}) == len(steps)
    assert spec.required is None or any(k == spec.required for *_, k in steps)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_driver_components_and_witnesses_agree_with_the_reference(rng: random.Random) -> None:
    g, packed, base = _graph(rng)
    want = ref.cycles_of(g)
    for spec in SPECS:
        found = components(packed, spec, base, witnessed=100)
        got = {c.first_op: (c.ops, len(c.steps or ())) for c in found}
        assert got == want[spec.name], spec.name
        for c in found:
            assert c.shortest
            _check_witness(g, spec, c.steps)


def test_a_search_cut_short_still_gives_a_simple_cycle(monkeypatch) -> None:
    """With the budget for one start only, the witness is a cycle (not the shortest,
    and said so), and a walk through an op twice is split to a cycle."""
    monkeypatch.setattr(cg, "SEARCH_BUDGET", 1)
    # 1 -> 2 -> 3 -> 1 and the shorter 2 <-> 3: from op 1 only the long one.
    packed = array("q", [pack(1, 2, WW), pack(2, 3, WW), pack(3, 1, WW), pack(3, 2, WW)])
    (c,) = components(packed, SPECS[0], 100, witnessed=1)
    assert (c.first_op, c.ops, c.shortest) == (1, 3, False)
    assert [s[0] for s in c.steps or ()] == [1, 2, 3]
    walk = [(5, 6, WR), (6, 5, PROCESS), (5, 7, WR), (7, 5, WR)]
    assert cg._simple(walk, PROCESS) == [(5, 6, WR), (6, 5, PROCESS)]
    assert cg._simple(walk, None) == [(5, 6, WR), (6, 5, PROCESS)]


# ---------------------------------------------------------------- the reference's model


@settings(max_examples=200, deadline=None)
@given(rng=st.randoms(use_true_random=False), plant=st.sampled_from([None, *th.PLANTS]))
@example(rng=random.Random(0), plant="G1c-process")
def test_the_reference_finds_planted_cycles_and_none_in_the_model(
    rng: random.Random, plant: str | None
) -> None:
    """The model (read_committed, commits inside their ops) closes no cycle of reads;
    each plant closes the kind it is named for (and the ones it implies), nothing
    else of the G1c family."""
    got = ref.cycles(th.ops(th.history(rng, plant)))
    want = {plant, *th.ALSO.get(plant, ())} - {None}
    assert {n for n in ("G1c", "G1c-process", "G1c-realtime") if got[n]} == want
    for name in want:
        assert len(got[name]) == 1
        ((size, length),) = got[name].values()
        assert size == length == 2  # each plant is a cycle of two ops


def test_the_model_interleaves_writes_into_g0() -> None:
    """The twins are not trivially acyclic: the model's ww edges close G0 cycles."""
    found = sum(bool(ref.cycles(th.ops(th.history(random.Random(s))))["G0"]) for s in range(60))
    assert found >= 5


# ---------------------------------------------------------------- planted, through Spark


def _rows(spark: Any, run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    from kafka_trial.spark_analysis.checks.runner import CHECKS
    from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
    from kafka_trial.spark_analysis.read.history_frames import load

    plan = AnalysisFrames(load(spark, str(run_dir / "history.jsonl")))
    try:
        return {
            n: sorted(
                (r.asDict(recursive=True) for r in CHECKS[n][0](plan).collect()),
                key=lambda r: r["first_op"],
            )
            for n in CYCLES
        }
    finally:
        plan.release()


# Planted cycles and their twins, judged in one history (tests/batched.py): a cycle
# cannot span two cases, which share no value (so no wr or ww edge) and follow one
# another in time (so realtime edges lead only from an earlier case to a later one).
CASES = Cases()
case = CASES.add


judged = judged_fixture(CASES, "cycles")


def _cycles(j: Judged) -> dict[str, list[dict[str, Any]]]:
    return {n: sorted(j.examples(n), key=lambda r: r["first_op"]) for n in CYCLES}


def _txn_done(h: Any, proc: int, sends: list[tuple[int, int, int]], polled: list) -> None:
    h.complete(
        "ok",
        proc,
        "txn",
        [send(v, p, o, "ok") for v, p, o in sends]
        + [{"op": "poll", "records": [rec(v, p, o) for v, p, o in polled]}],
    )


def _mutual(b: Builder, crossed: bool) -> None:
    """Two overlapping transactions: each reads the other's write (crossed), or each
    only its partition's earlier committed value (the twin)."""
    b.txn(5, [(1, 0, 0), (2, 1, 0)], "ok")
    h = b.h
    h.invoke(0, "txn", [send(10, 0), {"op": "poll"}])
    h.invoke(1, "txn", [send(11, 1), {"op": "poll"}])
    _txn_done(h, 0, [(10, 0, 1)], [(11, 1, 1)] if crossed else [(2, 1, 0)])
    _txn_done(h, 1, [(11, 1, 1)], [(10, 0, 1)] if crossed else [(1, 0, 0)])
    b.drain(90, [(1, 0, 0), (10, 0, 1), (2, 1, 0), (11, 1, 1)], {0: 2, 1: 2})


case("mutual reads")(lambda b: _mutual(b, crossed=True))
case("mutual reads, twin")(lambda b: _mutual(b, crossed=False))


def test_overlapping_transactions_that_read_each_other_are_a_g1c(
    judged: dict[str, Judged],
) -> None:
    j = judged["mutual reads"]
    got = _cycles(j)
    (w,) = got["G1c"]
    assert (w["ops"], w["length"], w["shortest"]) == (2, 2, True)
    steps = w["steps"]
    assert [s["kind"] for s in steps] == ["wr", "wr"]
    # Rotated to the lowest op: process 0's op wrote 10 at offset 1, process 1's read it.
    assert (steps[0]["from_op"], steps[0]["to_op"]) == (steps[1]["to_op"], steps[1]["from_op"])
    v = j.case.v
    assert [(s["value"], s["partition"], s["offset"]) for s in steps] == [
        (v(10), 0, 1),
        (v(11), 1, 1),
    ]
    assert [s["from_process"] for s in steps] == [j.case.p(0), j.case.p(1)]
    assert got["G1c-realtime"] == [] and got["G1c-process"] == []
    assert judged["mutual reads, twin"].seen() == {}


def _future(b: Builder, early: bool) -> None:
    """A consumer poll of value 7 before (early) or after the transaction writing it."""
    if early:
        b.poll(10, [(7, 0, 0)])
    b.txn(0, [(7, 0, 0)], "ok")
    if not early:
        b.poll(10, [(7, 0, 0)])
    b.drain(90, [(7, 0, 0)], {0: 1})


case("read from the future")(lambda b: _future(b, early=True))
case("read from the past")(lambda b: _future(b, early=False))


def test_a_read_from_the_future_is_a_g1c_realtime(judged: dict[str, Judged]) -> None:
    j = judged["read from the future"]
    got = _cycles(j)
    (w,) = got["G1c-realtime"]
    kinds = {s["kind"]: s for s in w["steps"]}
    assert set(kinds) == {"wr", "realtime"}
    poll, txn = kinds["realtime"]["from_op"], kinds["realtime"]["to_op"]
    assert kinds["realtime"]["from_done"] == poll < kinds["realtime"]["to_invoked"] < txn
    assert (kinds["wr"]["from_op"], kinds["wr"]["to_op"], kinds["wr"]["value"]) == (
        txn,
        poll,
        j.case.v(7),
    )
    assert got["G1c"] == [] and got["G1c-process"] == []
    assert judged["read from the past"].seen() == {}


def _own_future(b: Builder, ahead: bool) -> None:
    """Process 0 reads, in a transaction, what its next (ahead) or previous one wrote."""
    if ahead:
        b.txn(0, [(1, 0, 0)], "ok", polled=[(2, 1, 0)]).txn(0, [(2, 1, 0)], "ok")
    else:
        b.txn(0, [(2, 1, 0)], "ok").txn(0, [(1, 0, 0)], "ok", polled=[(2, 1, 0)])
    b.drain(90, [(1, 0, 0), (2, 1, 0)], {0: 1, 1: 1})


case("own later write read")(lambda b: _own_future(b, ahead=True))
case("own earlier write read")(lambda b: _own_future(b, ahead=False))


def test_reading_ones_own_later_write_is_a_g1c_process(judged: dict[str, Judged]) -> None:
    j = judged["own later write read"]
    got = _cycles(j)
    (w,) = got["G1c-process"]
    assert sorted(s["kind"] for s in w["steps"]) == ["process", "wr"]
    (proc,) = [s for s in w["steps"] if s["kind"] == "process"]
    assert proc["from_process"] == proc["to_process"] == j.case.p(0)
    assert len(got["G1c-realtime"]) == 1  # the same read is from the future
    assert judged["own earlier write read"].seen() == {}


def _crossing(b: Builder, crossed: bool) -> None:
    """Two sends to two partitions, landing in opposite orders (crossed) or not."""
    at = (1, 0) if crossed else (0, 1)
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, at[0], "ok")])
    b.sends(1, [(3, 0, 1, "ok"), (4, 1, at[1], "ok")])
    p1 = sorted([(2, 1, at[0]), (4, 1, at[1])], key=lambda r: r[2])
    b.drain(90, [(1, 0, 0), (3, 0, 1), *p1], {0: 2, 1: 2})


case("writes crossed")(lambda b: _crossing(b, crossed=True))
case("writes in one order")(lambda b: _crossing(b, crossed=False))


def test_writes_in_opposite_orders_are_a_g0(judged: dict[str, Judged]) -> None:
    j = judged["writes crossed"]
    assert j.seen() == {"G0": 1}
    (w,) = j.examples("G0")
    v = j.case.v
    assert [(s["kind"], s["value"], s["next_value"]) for s in w["steps"]] == [
        ("ww", v(1), v(3)),
        ("ww", v(4), v(2)),
    ]
    assert judged["writes in one order"].seen() == {}


def test_a_g0_is_allowed_by_default(spark, tmp_path: Path) -> None:
    from kafka_trial.spark_analysis.job import analyze

    b = Builder(tmp_path, cycles="on")  # sends, no transaction: searched only when asked
    _crossing(b, crossed=True)
    res = analyze(b.done())
    assert res.count("G0") == 1 and res.count("G1c") == 0
    assert res.allowed_seen == ("G0",) and res.valid is True, res.problems


def _doubt(b: Builder, resent: bool) -> None:
    """The mutual reads of two transactions, where value 10 was (resent) or was not
    also sent by process 2, whose send ended unknown."""
    if resent:
        b.sends(2, [(10, 0, None, "info")])
    h = b.h
    h.invoke(0, "txn", [send(10, 0), {"op": "poll"}])
    h.invoke(1, "txn", [send(11, 1), {"op": "poll"}])
    _txn_done(h, 0, [(10, 0, 0)], [(11, 1, 0)])
    _txn_done(h, 1, [(11, 1, 0)], [(10, 0, 0)])
    b.drain(90, [(10, 0, 0), (11, 1, 0)], {0: 1, 1: 1})


case("a writer in doubt")(lambda b: _doubt(b, resent=True))
case("a writer for sure")(lambda b: _doubt(b, resent=False))


def test_a_value_two_ops_may_have_written_draws_no_edge(judged: dict[str, Judged]) -> None:
    """An edge from the wrong writer could close a cycle that never was."""
    assert _cycles(judged["a writer in doubt"])["G1c"] == []
    assert len(_cycles(judged["a writer for sure"])["G1c"]) == 1


def _unknown_writer(b: Builder, drained: bool) -> None:
    """Process 0 reads 11, which a transaction invoked after it completed sent, and
    which ended unknown: committed only if the drain read 11."""
    b.txn(0, [(10, 0, 0)], "ok", polled=[(11, 1, 0)]).txn(1, [(11, 1, 0)], "info")
    b.drain(90, [(10, 0, 0), *([(11, 1, 0)] if drained else [])], {0: 1, 1: 1})


case("an unknown writer, proven")(lambda b: _unknown_writer(b, drained=True))
case("an unknown writer, unproven")(lambda b: _unknown_writer(b, drained=False))


def test_an_unknown_transaction_writes_only_if_the_drain_proves_it(
    judged: dict[str, Judged],
) -> None:
    assert len(_cycles(judged["an unknown writer, proven"])["G1c-realtime"]) == 1
    assert _cycles(judged["an unknown writer, unproven"])["G1c-realtime"] == []


@case("an offset with two values")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, 1, "ok")])
    b.sends(1, [(3, 0, 1, "ok"), (4, 1, 0, "ok")])
    b.poll(10, [(9, 0, 1)])
    b.drain(90, [(1, 0, 0), (3, 0, 1), (4, 1, 0), (2, 1, 1)], {0: 2, 1: 2})


def test_an_offset_read_with_two_values_orders_nothing(judged: dict[str, Judged]) -> None:
    """Offset 1 of partition 0 read as 3 and as 9: the crossing through it is no G0."""
    assert _cycles(judged["an offset with two values"])["G0"] == []


def test_pruning_and_the_witness_cap_keep_the_counts(spark, tmp_path: Path, monkeypatch) -> None:
    """Counted first, then also pruned in Spark (both forced), and with one witness
    only: the same components; the second is counted without a cycle."""
    from kafka_trial.spark_analysis.cycles import edges as cc

    b = Builder(tmp_path / "two")
    for base, (p, q) in ((0, (0, 1)), (10, (2, 3))):
        b.sends(0, [(base + 1, p, 0, "ok"), (base + 2, q, 1, "ok")])
        b.sends(1, [(base + 3, p, 1, "ok"), (base + 4, q, 0, "ok")])
    run = b.drain(90, [], None).done()
    plain = _rows(spark, run)["G0"]
    monkeypatch.setattr(cc, "COLLECT_AT_ONCE", 0)
    counted = _rows(spark, run)["G0"]  # counted first, trimmed on the driver
    monkeypatch.setattr(cc, "PRUNE_ABOVE", 0)
    monkeypatch.setattr(cc, "WITNESSED", 1)
    pruned = _rows(spark, run)["G0"]
    want = [(r["first_op"], r["ops"]) for r in plain]
    assert [(r["first_op"], r["ops"]) for r in counted] == want
    assert [(r["first_op"], r["ops"]) for r in pruned] == want
    assert len(pruned) == 2 and pruned[0]["steps"] and pruned[1]["steps"] is None


def test_a_graph_too_large_for_the_driver_is_unknown(spark, tmp_path: Path, monkeypatch) -> None:
    from kafka_trial.spark_analysis.cycles import edges as cc
    from kafka_trial.spark_analysis.job import analyze

    monkeypatch.setattr(cc, "DRIVER_MAX_EDGES", 1)
    b = Builder(tmp_path)  # transactions: check.cycles auto searches them
    _mutual(b, crossed=True)
    res = analyze(b.done())
    for name in CYCLES:
        assert res.count(name) is None and "more than the driver takes" in (
            res.anomalies[name].error or ""
        )
    assert res.valid == "unknown"


# ---------------------------------------------------------------- verdict and words


def test_g0_never_fails_a_run_and_g1c_does() -> None:
    found = {n: {"count": 0} for n in CYCLES}
    assert decide({**found, "G0": {"count": 3}}, ())["valid"] is True
    assert decide({**found, "G1c": {"count": 1}}, ())["valid"] is False
    assert decide({**found, "G1c": {"count": 1}}, ("G1c",))["valid"] is True


def test_a_check_that_did_not_run_decides_nothing() -> None:
    """check.cycles off (or auto without a transaction): skipped, neither a pass nor
    unknown; a crashed check (count None, no reason to skip) stays unknown."""
    skipped = {n: {"count": None, "skipped": "check.cycles is off"} for n in CYCLES}
    v = decide({**skipped, "lost-write": {"count": 0}}, ())
    assert v["valid"] is True and v["unknown"] == []
    assert decide({**skipped, "G1c": {"count": None}}, ())["valid"] == "unknown"


def test_which_cycle_checks_run_by_setting() -> None:
    """on and off need no look at the history (auto's look is in the Spark tests)."""
    from kafka_trial.spark_analysis.cycles.edges import not_searched

    assert not_searched(None, "on") == {}
    assert not_searched(None, "off") == dict.fromkeys(CYCLES, "check.cycles is off")


def test_the_reports_say_not_checked(tmp_path: Path) -> None:
    from kafka_trial.checkers.results import Results
    from kafka_trial.report.html import write_report
    from kafka_trial.report.junit import testsuite
    from kafka_trial.report.text import render as text

    from tests.results import made_results

    made = made_results(True, {}).to_dict()
    for n in CYCLES:
        made["anomalies"][n] |= {"count": None, "skipped": "check.cycles is off"}
    res = Results.model_validate(made)
    assert res.judged("G1c") == "not checked"
    assert "G1c                          -  (not checked: check.cycles is off)" in text(
        res, tmp_path
    )
    xml = ET.tostring(testsuite("run", res), encoding="unicode")
    assert 'skipped="4"' in xml and 'message="G1c: not checked: check.cycles is off"' in xml
    (tmp_path / "results.json").write_text(res.to_json())
    html = write_report(tmp_path).read_text()
    assert "<td>G1c</td><td>-</td><td>not checked: check.cycles is off</td>" in html
    assert 'id="a-G1c"' not in html  # no section for what was not looked at


def test_a_cycle_witness_reads_step_by_step_with_links_to_the_timeline() -> None:
    from kafka_trial.checkers.results import Example
    from kafka_trial.report.witnesses import explain

    step = {"from_process": "0", "to_process": "1", "topic": "trial", "partition": 0}
    ex = {
        "first_op": 3,
        "ops": 2,
        "length": 2,
        "shortest": True,
        "steps": [
            {
                **step,
                "kind": "wr",
                "from_op": 3,
                "to_op": 8,
                "value": 5,
                "offset": 17,
                "from_time": 1_500_000_000,
                "to_time": 2_000_000_000,
            },
            {
                **step,
                "kind": "realtime",
                "from_op": 8,
                "to_op": 3,
                "from_done": 8,
                "to_invoked": 9,
                "from_time": 2_000_000_000,
                "to_time": 2_100_000_000,
            },
        ],
    }
    text, mark = explain("G1c-realtime", Example.of(ex), None, [], 10.0)
    assert mark == 1.5
    assert (
        '<a href="#timeline" title="at 1.500s">op #3</a> (process 0) wrote 5 to trial/0 at '
        'offset 17; <a href="#timeline" title="at 2.000s">op #8</a> (process 1) read it'
    ) in text
    assert "completed at 2.000s (line 8), before" in text and "invoked at 2.100s (line 9)" in text
    assert "a cycle of 2 edges, in a strongly connected component of 2 ops" in text


def test_the_witnessed_components_are_the_examples_results_keep() -> None:
    from kafka_trial.spark_analysis.checks import runner as queue_checks
    from kafka_trial.spark_analysis.cycles import edges as checks_cycles

    assert checks_cycles.WITNESSED == queue_checks.EXAMPLES
    assert {queue_checks.CHECKS[n][1] for n in CYCLES} == {"cycles"}


@pytest.mark.parametrize("name", CYCLES)
def test_each_cycle_anomaly_is_registered_once_with_its_definition(name: str) -> None:
    from kafka_trial.checkers.anomalies import ANOMALIES, DEFAULT_ALLOWED

    a = ANOMALIES[name]
    assert a.unit == "cycles" and "cycle" in a.definition
    assert (name in DEFAULT_ALLOWED) is (name == "G0")
