"""The verdict policy for a run that asked for faults: checkers.verdict.no_fault_problems.

Issue 25: a run that asked for faults and injected none tested nothing, so its verdict
is unknown however clean its history."""

from __future__ import annotations

from kafka_trial.checkers.verdict import decide, no_fault_problems

CLEAN: dict[str, dict[str, int]] = {"lost": {"count": 0}, "duplicate": {"count": 0}}


def test_faults_asked_and_none_injected_is_unknown_with_the_problem() -> None:
    problems = no_fault_problems(("kill-leader", "partition-leader"), 0)
    assert problems == [
        "no fault was injected: the run asked for kill-leader, partition-leader, "
        "and no fault op took effect; rerun with a longer --duration or another seed"
    ]
    verdict = decide(CLEAN, (), problems)
    assert verdict["valid"] == "unknown" and verdict["problems"] == problems


def test_faults_asked_and_injected_leaves_the_verdict_alone() -> None:
    assert no_fault_problems(("kill-leader",), 1) == []
    assert decide(CLEAN, (), no_fault_problems(("kill-leader",), 3))["valid"] is True


def test_no_faults_asked_leaves_the_verdict_alone() -> None:
    assert no_fault_problems((), 0) == []
    assert decide(CLEAN, (), no_fault_problems((), 0))["valid"] is True


def test_a_mark_is_no_fault_injected() -> None:
    """The analysis counts faults as catalog.is_fault does: marks, heals and waits
    are none, so a run whose nemesis only marked and healed injected no fault."""
    from kafka_trial.spark_analysis.facts.stats import faults_injected as _faults_injected

    only_marks = _faults_injected({"mark": 2, "heal-all": 1})
    assert only_marks == 0
    assert no_fault_problems(("kill-leader",), only_marks) != []
    with_kill = _faults_injected({"mark": 2, "kill": 1, "start": 1})
    assert with_kill == 1
    assert no_fault_problems(("kill-leader",), with_kill) == []


def test_a_cut_off_last_line_is_the_runs_end_and_damage_inside_is_unknown() -> None:
    from kafka_trial.checkers.verdict import damaged_inside, damaged_problems

    assert damaged_inside(1, last_line_cut=True) == 0
    assert damaged_inside(3, last_line_cut=True) == 2
    assert damaged_inside(1, last_line_cut=False) == 1
    assert damaged_problems(0, [(5, "{")]) == []
    (problem,) = damaged_problems(2, [(5, '{"index":5,"ti'), (None, "garbage")])
    assert problem.startswith("2 damaged line(s) inside the history")
    assert "index 5" in problem and "no index" in problem
