"""`kafka-trial shrink` on a fake cluster: runs whose outcome a planted fault step
decides, with the probability a real failure has, judged by hand-made verdicts."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from kafka_trial.checkers.results import Results
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.schedule import Step, write_schedule
from kafka_trial.contracts.shrink_record import SHRUNK_CONFIG, read_shrink
from kafka_trial.contracts.spec.run import RunSpec
from kafka_trial.harness.shrink import load_source, shrink
from kafka_trial.harness.shrink_search import MIN_FAULT_S, Candidate, Episode, Search, episodes
from kafka_trial.harness.spec import build_spec, load_spec
from kafka_trial.nemesis.schedule import schedule
from kafka_trial.report.shrink_page import render_shrink_page

from tests.results import made_results

PACKAGES = ("kill-leader", "pause", "isolate-broker")
PLANTED = Step(48.0, "fault", "pause", 777)  # the one step that causes the anomaly


def _steps() -> list[Step]:
    """Six fault episodes, one at a time, 8 s each with 6 s between: the planted one
    fourth."""
    out = []
    for i in range(6):
        at = 6.0 + 14 * i
        fault = PLANTED if at == PLANTED.at_s else Step(at, "fault", PACKAGES[i % 3], 100 + i)
        out += [fault, Step(at + 8, "heal", fault.package)]
    return out


def _source(tmp_path: Path, verdict: object = False, seen: tuple[str, ...] = ("lost-write",)):
    d = tmp_path / "source"
    d.mkdir(parents=True)
    spec = build_spec(
        {"duration_s": 90, "nemesis": {"faults": list(PACKAGES), "targets": ["leader", "random"]}}
    )
    (d / "spec.json").write_text(spec.to_json())
    write_schedule(d, _steps())
    counts = dict.fromkeys(seen, 3)
    made = made_results(verdict, counts, forbidden_seen=seen if verdict is False else ())
    (d / "results.json").write_text(made.to_json())
    return d


class FakeRuns:
    """Runs on a fake cluster: a run whose schedule holds the planted step shows a
    lost write with probability `p` (seeded); any other run is clean."""

    def __init__(self, seed: int, p: float = 0.5, fails=None) -> None:
        self.rng = random.Random(seed)
        self.p = p
        self.ran: list[RunSpec] = []
        self.failing: dict[Path, bool] = {}
        self.fails = fails or (lambda spec: any(_planted(s) for s in spec.nemesis.steps))

    def run(self, spec: RunSpec, run_dir: Path) -> None:
        self.ran.append(spec)
        self.failing[run_dir] = self.fails(spec) and self.rng.random() < self.p

    def judge(self, run_dir: Path) -> Results:
        bad = self.failing[run_dir]
        return made_results(
            not bad, {"lost-write": 2 if bad else 0}, forbidden_seen=("lost-write",) * bad
        )


def _planted(s: Step) -> bool:
    return s.action == "fault" and (s.package, s.pick) == (PLANTED.package, PLANTED.pick)


def _faults(steps) -> list[Step]:
    return [s for s in steps if s.action == "fault"]


def test_the_planted_step_is_found_alone_within_the_repeat_budget(tmp_path: Path) -> None:
    runs = FakeRuns(seed=1)
    rec = shrink(load_source(_source(tmp_path), None), tmp_path / "out", 3, runs.run, runs.judge)
    assert rec.state == "done" and rec.anomalies == ("lost-write",)
    (only,) = _faults(rec.best_steps)
    assert _planted(only)
    # Every candidate ran at most 3 times; a run that showed it stopped the candidate
    # within one more run (the one that ran while it was judged).
    for t in rec.tried:
        assert 1 <= len(t.repeats) <= 3
        shown = [bool(r.shown["lost-write"]) for r in t.repeats]
        assert t.failed == any(shown) and not any(shown[:-2])
    assert rec.runs == len(runs.ran)


def test_whatever_the_luck_the_result_is_a_schedule_that_failed(tmp_path: Path) -> None:
    """A passing candidate proves nothing, so a search may miss the smallest schedule,
    never keep one that did not fail: over 40 seeds the planted step is always in the
    result, and found alone in most."""
    alone = 0
    for seed in range(40):
        runs = FakeRuns(seed)
        src = load_source(_source(tmp_path / str(seed)), None)
        rec = shrink(src, tmp_path / str(seed) / "out", 3, runs.run, runs.judge)
        faults = _faults(rec.best_steps)
        assert any(_planted(s) for s in faults), seed
        alone += len(faults) == 1
    assert alone >= 30, alone


def test_the_phase_is_cut_and_faults_held_as_short_as_still_fails(tmp_path: Path) -> None:
    # Fails only while the planted fault is held at least 3 s.
    def fails(spec: RunSpec) -> bool:
        eps = episodes(spec.nemesis.steps)
        return any(_planted(e.fault) and e.held_s >= 3 for e in eps)

    runs = FakeRuns(seed=0, p=1.0, fails=fails)
    rec = shrink(load_source(_source(tmp_path), None), tmp_path / "out", 1, runs.run, runs.judge)
    (ep,) = episodes(rec.best_steps)
    assert ep.fault.at_s == 6.0  # the gaps closed to the quiet time
    assert 3 <= ep.held_s < 8 and ep.held_s == 4.0  # 8 -> 4 fails, 4 -> 2 does not
    assert rec.best_duration_s == ep.heal.at_s + 6.0  # the phase ends a quiet spell later
    assert rec.best_targets == ("leader",)  # simpler targets: one role
    assert MIN_FAULT_S <= 2.0


def test_the_shrunk_config_replays_the_smallest_schedule(tmp_path: Path) -> None:
    runs = FakeRuns(seed=1, p=1.0)
    rec = shrink(load_source(_source(tmp_path), None), tmp_path / "out", 2, runs.run, runs.judge)
    text = (tmp_path / "out" / SHRUNK_CONFIG).read_text()
    assert "kafka-trial run --config" in text.splitlines()[1]
    spec = load_spec(tmp_path / "out" / SHRUNK_CONFIG)
    assert spec.nemesis.faults == ("pause",) and spec.duration_s == rec.best_duration_s
    assert schedule(spec.nemesis, spec.seed, spec.duration_s) == list(rec.best_steps)
    # The record reads back as it was written, and the page lists the steps.
    assert read_shrink(tmp_path / "out") == rec
    page = render_shrink_page(rec)
    assert "pause (pick 777)" in page and "cgroup-freeze" in page and "lost-write" in page


def _breaking_at(n: int, exc: BaseException, runs: FakeRuns):
    """A run function whose n-th call raises `exc` and the others run `runs`."""
    calls = 0

    def run(spec: RunSpec, run_dir: Path) -> None:
        nonlocal calls
        calls += 1
        if calls == n:
            raise exc
        runs.run(spec, run_dir)

    return run


def test_ctrl_c_keeps_the_best_found_so_far(tmp_path: Path) -> None:
    runs = FakeRuns(seed=1, p=1.0)
    run = _breaking_at(4, KeyboardInterrupt(), runs)
    rec = shrink(load_source(_source(tmp_path), None), tmp_path / "out", 1, run, runs.judge)
    assert rec.state == "interrupted" and read_shrink(tmp_path / "out").state == "interrupted"
    assert rec.best and len(_faults(rec.best_steps)) < 6  # a smaller failing one by then
    assert yaml.safe_load((tmp_path / "out" / SHRUNK_CONFIG).read_text())["nemesis"]["steps"]


def test_a_run_with_nothing_forbidden_or_no_fault_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TrialError, match="verdict is VALID: nothing forbidden"):
        load_source(_source(tmp_path / "a", verdict=True, seen=()), None)
    with pytest.raises(TrialError, match="shows no duplicate"):
        load_source(_source(tmp_path / "b"), "duplicate")
    d = _source(tmp_path / "c")
    write_schedule(d, [])
    with pytest.raises(TrialError, match="schedule has no fault step"):
        load_source(d, None)
    # An allowed anomaly can be sought by name.
    assert load_source(_source(tmp_path / "d"), "lost-write").anomalies == ("lost-write",)


def test_ddmin_keeps_only_failing_subsets_and_tries_each_once() -> None:
    eps = tuple(episodes(_steps()))
    tried: list[tuple] = []

    def trial(c: Candidate) -> bool:
        tried.append(c.key())
        return any(_planted(e.fault) for e in c.episodes)

    search = Search(Candidate("source", eps, 90.0), trial, 6.0)
    search.ddmin()
    assert [e.fault for e in search.best.episodes] == [PLANTED]
    assert len(tried) == len(set(tried)) <= 8


def test_shortening_never_starts_a_fault_later_or_lengthens_the_phase() -> None:
    """A source whose first fault came before the quiet time (4 s against 6 s) and whose
    phase ended sooner after its last heal than the quiet time: packing used to start
    at 6 s and propose a 28 s phase for a 26 s source. Every candidate stays within
    the source's phase, and its first fault no later than the source's."""
    fault = Step(4.0, "fault", "pause", 1)
    source = Candidate("source", (Episode(fault, Step(20.0, "heal", "pause")),), 24.0)
    tried: list[Candidate] = []

    def trial(c: Candidate) -> bool:
        tried.append(c)
        return True

    search = Search(source, trial, 6.0)
    search.shorten()
    assert tried, "the faults held shorter were tried"
    assert all(c.duration_s <= 24.0 for c in tried), [c.duration_s for c in tried]
    assert all(c.episodes[0].fault.at_s <= 4.0 for c in tried)
    # The twin: gaps longer than the quiet time are still closed to it.
    late = Candidate(
        "source", (Episode(replace(fault, at_s=30.0), Step(46.0, "heal", "pause")),), 60.0
    )
    search = Search(late, lambda c: True, 6.0)
    search.shorten()
    assert search.best.episodes[0].fault.at_s == 6.0 and search.best.duration_s < 60.0


def test_a_written_schedule_must_heal_what_it_starts() -> None:
    base = {"duration_s": 30, "nemesis": {"faults": ["pause"]}}
    fault = {"at_s": 6, "action": "fault", "package": "pause", "pick": 1}
    with pytest.raises(TrialError, match="never heals pause"):
        build_spec(base | {"nemesis": {"faults": ["pause"], "steps": [fault]}})
    heal = {"at_s": 40, "action": "heal", "package": "pause"}
    with pytest.raises(TrialError, match=r"before nemesis\.steps' last step at 40"):
        build_spec(base | {"nemesis": {"faults": ["pause"], "steps": [fault, heal]}})
    ok = build_spec({"duration_s": 40, "nemesis": {"faults": ["pause"], "steps": [fault, heal]}})
    assert json.loads(ok.to_json())["nemesis"]["steps"][1] == heal | {"at_s": 40.0, "pick": 0}


def test_a_run_that_breaks_is_a_repeat_without_a_verdict(tmp_path: Path) -> None:
    """One broken run (the cluster would not start) does not end the search: it is
    recorded with its error, and the search goes on to a failing schedule."""
    runs = FakeRuns(seed=1, p=1.0)
    run = _breaking_at(1, RuntimeError("the cluster did not come up"), runs)
    rec = shrink(load_source(_source(tmp_path), None), tmp_path / "out", 2, run, runs.judge)
    assert rec.state == "done"
    first = rec.tried[0].repeats[0]
    assert first.verdict == "ERROR" and first.error == "RuntimeError: the cluster did not come up"
    assert [s for s in _faults(rec.best_steps) if _planted(s)]
