"""`--until-fail N`: the hunt's loop, its summary and exit codes, and the command-line
errors, with the run step replaced by one that returns scripted verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka_trial.checkers.results import Results
from kafka_trial.harness import campaign as cp
from kafka_trial.harness import until_fail as uf
from kafka_trial.harness.cli import main
from kafka_trial.harness.spec import RunSpec, build_spec

from tests.results import made_results

VALID, INVALID, UNKNOWN, SETUP = 0, 1, 2, 3


class Scripted:
    """A run step that answers each seed with the code scripted for it (valid when
    none is), and can be interrupted as Ctrl-C would, during the run of a seed."""

    def __init__(
        self, tmp_path: Path, codes: dict[int, int] | None = None, interrupt_at: int | None = None
    ) -> None:
        self.tmp_path, self.codes, self.interrupt_at = tmp_path, codes or {}, interrupt_at
        self.seeds: list[int] = []

    def __call__(self, spec: RunSpec) -> uf.Attempt:
        if spec.seed == self.interrupt_at:
            raise KeyboardInterrupt
        self.seeds.append(spec.seed)
        run_dir = self.tmp_path / f"run-{spec.seed}"
        run_dir.mkdir()
        spec.write(run_dir)
        code = self.codes.get(spec.seed, VALID)
        return uf.Attempt(spec.seed, run_dir, code, "no such image" if code == SETUP else "")


def _spec(seed: int = 0) -> RunSpec:
    return build_spec({"seed": seed, "duration_s": 20, "nemesis": {"faults": ["kill-leader"]}})


def _hunt(tmp_path: Path, limit: int, seed: int = 0, **script: Any) -> tuple[uf.Hunt, Scripted]:
    step = Scripted(tmp_path, **script)
    return uf.hunt(_spec(seed), limit, step, say=lambda s: None), step


def test_seeds_go_up_from_the_given_seed_and_stop_at_the_first_invalid(tmp_path: Path) -> None:
    hunt, step = _hunt(tmp_path, 10, seed=40, codes={43: INVALID, 45: INVALID})
    assert step.seeds == [40, 41, 42, 43]
    assert hunt.stopped_by is not None and hunt.stopped_by.seed == 43
    assert hunt.exit_code == 1
    text = "\n".join(hunt.summary())
    assert "INVALID: seed 43" in text
    assert f"run dir: {tmp_path / 'run-43'}" in text
    assert f"reproduce: kafka-trial run --config {tmp_path / 'run-43' / 'spec.json'}" in text
    # The command replays the failing seed itself, not the one the hunt started from.
    assert json.loads((tmp_path / "run-43" / "spec.json").read_text())["seed"] == 43


def test_n_runs_that_all_pass_exit_0(tmp_path: Path) -> None:
    hunt, step = _hunt(tmp_path, 3)
    assert step.seeds == [0, 1, 2]
    assert hunt.stopped_by is None and hunt.exit_code == 0
    assert hunt.summary() == ["until-fail: 3 of at most 3 runs, 3 valid", "  all 3 runs passed"]


def test_unknown_runs_go_on_are_listed_and_exit_2_when_nothing_failed(tmp_path: Path) -> None:
    hunt, step = _hunt(tmp_path, 4, codes={1: UNKNOWN, 2: UNKNOWN})
    assert step.seeds == [0, 1, 2, 3]  # an unknown run does not end the hunt
    assert hunt.exit_code == 2
    head, *rest = hunt.summary()
    assert (
        head == "until-fail: 4 of at most 4 runs, 2 valid, 2 unknown (neither a pass nor a failure)"
    )
    assert rest == [
        f"  unknown: seed 1: {tmp_path / 'run-1'}",
        f"  unknown: seed 2: {tmp_path / 'run-2'}",
    ]


def test_a_failure_after_unknown_runs_is_the_exit_code(tmp_path: Path) -> None:
    hunt, step = _hunt(tmp_path, 5, codes={0: UNKNOWN, 1: INVALID})
    assert step.seeds == [0, 1] and hunt.exit_code == 1


def test_a_run_that_cannot_run_ends_the_hunt_with_its_reason(tmp_path: Path) -> None:
    hunt, step = _hunt(tmp_path, 5, codes={1: SETUP})
    assert step.seeds == [0, 1] and hunt.exit_code == 3
    assert "  setup problem: seed 1: no such image" in hunt.summary()


def test_ctrl_c_ends_the_hunt_with_what_ran_so_far(tmp_path: Path) -> None:
    hunt, step = _hunt(tmp_path, 10, codes={1: UNKNOWN}, interrupt_at=3)
    assert step.seeds == [0, 1, 2]
    assert hunt.interrupted and hunt.exit_code == 130
    summary = hunt.summary()
    assert summary[0] == (
        "until-fail: 3 of at most 10 runs, 2 valid, 1 unknown (neither a pass nor a failure)"
    )
    assert summary[-1] == "  interrupted before a run failed"


def test_the_hunts_exit_code_is_the_first_stopping_runs() -> None:
    assert uf.hunt_code([0, 2, 0]) == 2 and uf.hunt_code([2, 1, 3]) == 1
    assert uf.hunt_code([0, 3]) == 3 and uf.hunt_code([0, 0]) == 0


def test_no_runs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(uf.TrialError, match="--until-fail 0 asks for no runs"):
        _hunt(tmp_path, 0)


# ---------------------------------------------------------------- the command


@pytest.fixture
def scripted_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scripted:
    """`kafka-trial run --until-fail` with the scripted step in place of real runs."""
    step = Scripted(tmp_path, {2: INVALID})
    monkeypatch.setattr(uf, "_real_step", lambda warm, spark_master, junit: step)
    return step


def test_run_until_fail_prints_the_failing_seed_and_exits_with_its_code(
    scripted_runs: Scripted, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--progress", "off", "run", "--until-fail", "5", "--seed", "1"])
    assert code == 1 and scripted_runs.seeds == [1, 2]
    out, err = capsys.readouterr()
    assert "until-fail [2/5] seed 2" in err  # progress on stderr, the result on stdout
    assert "INVALID: seed 2" in out
    assert f"reproduce: kafka-trial run --config {tmp_path / 'run-2' / 'spec.json'}" in out


def test_run_until_fail_ctrl_c_prints_the_summary_and_where_to_go_on(
    scripted_runs: Scripted, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted_runs.codes, scripted_runs.interrupt_at = {}, 1
    code = main(["--progress", "off", "run", "--until-fail", "5"])
    assert code == 130
    out, err = capsys.readouterr()
    assert "until-fail: 1 of at most 5 runs, 1 valid" in out
    assert "--seed 1" in err.splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "problem", "fix"),
    [
        (["run", "--until-fail", "0"], "--until-fail 0 asks for no runs", "--until-fail 1 or more"),
        (
            ["run", "--until-fail", "-2"],
            "--until-fail -2 asks for no runs",
            "--until-fail 1 or more",
        ),
        (
            ["run", "--until-fail", "3", "--no-analyze"],
            "--no-analyze skips it",
            "drop --no-analyze",
        ),
        (
            ["campaign", "--presets", "safe", "--until-fail", "0"],
            "--until-fail 0 asks for no runs",
            "--until-fail 1 or more",
        ),
        (
            ["campaign", "--resume", "somewhere", "--until-fail", "2"],
            "--resume goes on with the saved campaign's own --until-fail",
            "drop --until-fail",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_fix(
    scripted_runs: Scripted,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    problem: str,
    fix: str,
) -> None:
    assert main(["--progress", "off", *argv]) == 3
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("kafka-trial: ") and problem in line.split(" -- fix: ")[0]
    assert fix in line.split(" -- fix: ")[1]
    assert scripted_runs.seeds == []  # nothing ran


def test_until_fail_that_is_not_a_number_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--until-fail", "many"])
    assert exited.value.code == 3
    assert "--until-fail: invalid int value" in capsys.readouterr().err


# ---------------------------------------------------------------- campaigns


def _verdict(code: int) -> Results:
    if code == INVALID:
        return made_results(False, {"lost-write": 3})
    return made_results("unknown" if code == UNKNOWN else True)


class CampaignRuns:
    """run_one for a campaign: results scripted by (preset, seed), valid otherwise."""

    def __init__(self, codes: dict[tuple[str, int], int] | None = None) -> None:
        self.codes = codes or {}
        self.ran: list[tuple[str, int]] = []

    def __call__(self, spec: RunSpec, run_dir: Path) -> Results:
        self.ran.append((spec.name, spec.seed))
        spec.write(run_dir)
        return _verdict(self.codes.get((spec.name, spec.seed), VALID))


def _campaign(seeds: Any = 1, rounds: int = 3) -> cp.CampaignSpec:
    return cp.CampaignSpec(presets=("safe", "acks1"), seeds=seeds, until_fail=rounds)


def test_a_campaign_hunt_repeats_the_matrix_with_new_seeds_until_a_run_fails(
    tmp_path: Path,
) -> None:
    runs = CampaignRuns({("acks1", 3): INVALID})
    state = cp.run_campaign(_campaign(seeds=2, rounds=5), tmp_path, runs, say=lambda s: None)
    # Round by round, every entry with the round's seeds; the round of the failure ends
    # at it.
    round_0 = [("safe", 0), ("safe", 1), ("acks1", 0), ("acks1", 1)]
    assert runs.ran == [*round_0, ("safe", 2), ("safe", 3), ("acks1", 2), ("acks1", 3)]
    assert state.status == "done" and state.exit_code == 1
    assert state.order[-1] == "acks1-s3"
    hunt = cp.hunt_of(_campaign(seeds=2, rounds=5), tmp_path, state)
    assert hunt.limit == 20 and hunt.stopped_by is not None
    assert hunt.stopped_by.name == "acks1-s3 (seed 3)"
    replay = f"kafka-trial run --config {tmp_path / 'acks1-s3' / 'spec.json'}"
    assert f"  reproduce: {replay}" in hunt.summary()


def test_a_campaign_hunt_that_never_fails_runs_every_round_and_exits_0(tmp_path: Path) -> None:
    runs = CampaignRuns({("safe", 1): UNKNOWN})
    state = cp.run_campaign(_campaign(rounds=3), tmp_path, runs, say=lambda s: None)
    assert runs.ran == [(p, s) for s in (0, 1, 2) for p in ("safe", "acks1")]
    assert state.exit_code == 2  # an unknown run: not all passed, nothing failed
    runs = CampaignRuns()
    (tmp_path / "b").mkdir()
    state = cp.run_campaign(_campaign(rounds=2), tmp_path / "b", runs, say=lambda s: None)
    assert len(runs.ran) == 4 and state.exit_code == 0


def test_later_rounds_never_reuse_a_seed() -> None:
    spec = cp.CampaignSpec(presets=("safe",), seeds=(0, 2), until_fail=3)
    assert [spec.seed_list(r) for r in range(3)] == [[0, 2], [3, 5], [6, 8]]
    assert cp.CampaignSpec(presets=("safe",), seeds=3).seed_list(1) == [3, 4, 5]


def test_a_resumed_hunt_that_had_found_a_failure_runs_nothing_more(tmp_path: Path) -> None:
    first = CampaignRuns({("safe", 1): INVALID})
    cp.run_campaign(_campaign(rounds=4), tmp_path, first, say=lambda s: None)
    assert first.ran[-1] == ("safe", 1)
    again = CampaignRuns()
    state = cp.run_campaign(_campaign(rounds=4), tmp_path, again, resume=True, say=lambda s: None)
    assert again.ran == [] and state.exit_code == 1


def test_an_interrupted_hunt_resumes_in_its_round(tmp_path: Path) -> None:
    class Interrupting(CampaignRuns):
        def __call__(self, spec: RunSpec, run_dir: Path) -> Results:
            if (spec.name, spec.seed) == ("acks1", 1):
                raise KeyboardInterrupt
            return super().__call__(spec, run_dir)

    with pytest.raises(KeyboardInterrupt):
        cp.run_campaign(_campaign(rounds=3), tmp_path, Interrupting(), say=lambda s: None)
    saved = cp.CampaignState.load(tmp_path)
    assert saved.status == "interrupted" and saved.order[-1] == "acks1-s1"
    hunt = cp.hunt_of(_campaign(rounds=3), tmp_path, saved, interrupted=True)
    assert hunt.exit_code == 130 and len(hunt.attempts) == 3
    rest = CampaignRuns()
    state = cp.run_campaign(_campaign(rounds=3), tmp_path, rest, resume=True, say=lambda s: None)
    assert rest.ran == [("acks1", 1), ("safe", 2), ("acks1", 2)] and state.exit_code == 0


def test_campaign_until_fail_judges_each_run_before_the_next_and_prints_the_hunt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    events: list[str] = []

    def fake_run(spec: RunSpec, run_dir: Path, warm: Any) -> None:
        events.append(f"run {spec.name} {spec.seed}")
        spec.write(run_dir)

    def fake_judge(run_dir: Path, **_: Any) -> SimpleNamespace:
        spec = json.loads((run_dir / "spec.json").read_text())
        events.append(f"judge {spec['name']} {spec['seed']}")
        failed = (spec["name"], spec["seed"]) == ("acks1", 1)
        return SimpleNamespace(results=_verdict(INVALID if failed else VALID))

    monkeypatch.setattr(cp, "run", fake_run)
    monkeypatch.setattr(cp, "judge", fake_judge)
    monkeypatch.setattr(cp, "spark_session", lambda master: pytest.fail("no Spark for a hunt"))
    argv = ["campaign", "--presets", "safe,acks1", "--until-fail", "4", "--duration", "20"]
    code = main(["--progress", "off", *argv, "--runs-dir", str(tmp_path)])
    assert code == 1
    assert events == [
        "run safe 0",
        "judge safe 0",
        "run acks1 0",
        "judge acks1 0",
        "run safe 1",
        "judge safe 1",
        "run acks1 1",
        "judge acks1 1",
    ]
    out = capsys.readouterr().out
    assert "[round 2/4 2/2] acks1-s1" in out
    assert "until-fail: 4 of at most 8 runs, 3 valid" in out
    assert "INVALID: acks1-s1 (seed 1)" in out and "reproduce: kafka-trial run --config " in out


def test_the_real_step_runs_on_the_warm_cluster_and_judges_before_returning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kafka_trial.contracts.errors import TrialError
    from kafka_trial.report import judge as judge_module

    warm = uf.WarmCluster()
    seen: list[tuple[int, Any]] = []

    def fake_run(spec: RunSpec, run_dir: Path, held: Any) -> None:
        seen.append((spec.seed, held))
        if spec.seed == 2:
            raise TrialError("no Kafka 9.9 on Maven Central", "pick a released version")

    def fake_judge(run_dir: Path, **_: Any) -> SimpleNamespace:
        results = _verdict(INVALID if seen[-1][0] == 1 else VALID)
        return SimpleNamespace(results=results, run_dir=run_dir, exit_code=results.exit_code)

    monkeypatch.setattr(uf, "run", fake_run)
    monkeypatch.setattr(judge_module, "judge", fake_judge)
    step = uf._real_step(warm, None, None)
    spec = build_spec({"runs_dir": str(tmp_path), "seed": 0})
    attempts = [step(spec.model_copy(update={"seed": s})) for s in (0, 1, 2)]
    assert [a.code for a in attempts] == [0, 1, 3]
    assert all(held is warm for _, held in seen)  # one warm cluster for every run
    assert attempts[2].error == "no Kafka 9.9 on Maven Central"
    assert all(a.run_dir.parent == tmp_path and a.run_dir.is_dir() for a in attempts)
    out, err = capsys.readouterr()
    assert "lost-write" in out  # the failing run's verdict, with what it found
    assert "no Kafka 9.9 on Maven Central -- fix: pick a released version" in err
