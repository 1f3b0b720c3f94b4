from __future__ import annotations

from checkers.verdict import decide, exit_code, merge
from harness.spec import NemesisSpec
from nemesis.schedule import schedule


def test_same_seed_same_schedule() -> None:
    spec = NemesisSpec(faults=("kill-leader", "isolate-broker"), fault_s=5, quiet_s=3)
    assert schedule(spec, 42, 100) == schedule(spec, 42, 100)
    assert schedule(spec, 42, 100) != schedule(spec, 43, 100)


def test_schedule_alternates_fault_and_heal_within_duration() -> None:
    steps = schedule(NemesisSpec(fault_s=5, quiet_s=3), 1, 40)
    assert [s.action for s in steps] == ["fault", "heal"] * (len(steps) // 2)
    assert all(s.at_s <= 40 for s in steps)
    for f, h in zip(steps[::2], steps[1::2], strict=True):
        assert h.package == f.package and h.at_s - f.at_s == 5


def test_no_faults_no_steps() -> None:
    assert schedule(NemesisSpec(faults=()), 1, 60) == []


def test_merge_false_beats_unknown_beats_true() -> None:
    assert merge([True, True]) is True
    assert merge([True, "unknown"]) == "unknown"
    assert merge(["unknown", False, True]) is False


def test_decide_separates_detection_from_policy() -> None:
    anomalies = {"duplicate": {"count": 3}, "lost-write": {"count": 0}, "reorder": {"count": 0}}
    v = decide(anomalies, allowed=["duplicate", "reorder"])
    assert v["valid"] is True
    assert v["allowed_seen"] == ["duplicate"]
    assert v["allowed_not_seen"] == ["reorder"]
    v = decide(anomalies, allowed=[])
    assert v["valid"] is False and v["forbidden_seen"] == ["duplicate"]


def test_crashed_check_is_unknown_unless_allowed() -> None:
    anomalies = {"duplicate": {"count": None}, "lost-write": {"count": 0}}
    assert decide(anomalies, allowed=[])["valid"] == "unknown"
    assert decide(anomalies, allowed=["duplicate"])["valid"] is True
    assert decide({"lost-write": {"count": 0}}, [], problems=["x"])["valid"] == "unknown"


def test_exit_codes() -> None:
    assert (exit_code(True), exit_code(False), exit_code("unknown")) == (0, 1, 2)
