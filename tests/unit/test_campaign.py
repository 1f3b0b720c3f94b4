"""The campaign's matrix, bookkeeping, interruption and resume, with a stand-in for
the run itself (the real thing: test_the_claims_campaign_is_a_campaign in
tests/integration/test_claims.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from kafka_trial.checkers.results import Results
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import set_status_sink, status
from kafka_trial.harness import campaign as cp
from kafka_trial.harness.cli import main
from kafka_trial.harness.spec import RunSpec
from kafka_trial.report.campaign import CampaignState, savings_line, summary_table, write_index

from tests.results import made_results


def _results(valid: Any, lost: int = 0) -> Results:
    allowed = ("lost-write", "unseen") if valid is True and lost else ()
    return made_results(valid, {"lost-write": lost}, allowed=allowed)


class FakeRuns:
    """Records what ran; the acks0 preset loses writes, everything else is clean."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.ran: list[tuple[str, int]] = []
        self.interrupt_at = interrupt_at

    def __call__(self, spec: RunSpec, run_dir: Path) -> Results:
        if self.interrupt_at is not None and len(self.ran) == self.interrupt_at:
            (run_dir / "history.jsonl").write_text('{"partial": true}\n')
            raise KeyboardInterrupt
        self.ran.append((spec.name, spec.seed))
        (run_dir / "report.html").write_text("<html></html>")
        return _results(False, 3) if spec.name == "acks0" else _results(True)


def test_the_matrix_is_sources_by_nemesis_by_seeds_by_versions() -> None:
    spec = cp.CampaignSpec(
        presets=("safe", "acks1"),
        nemesis=("kill-leader", "pause,isolate-broker"),
        seeds=2,
        kafka_versions=("4", "3.9"),
        duration_s=20,
    )
    es = cp.entries(spec)
    assert len(es) == 2 * 2 * 2 * 2
    assert es[0].key == "safe-kill-leader-s0-k4"
    assert "acks1-pause+isolate-broker-s1-k3.9" in {e.key for e in es}
    e = next(e for e in es if e.key == "acks1-pause+isolate-broker-s1-k3.9")
    assert e.config["nemesis"]["faults"] == ["pause", "isolate-broker"]
    assert e.config["cluster"]["kafka_version"] == "3.9" and e.config["seed"] == 1
    assert e.config["duration_s"] == 20 and e.config["producer"]["acks"] == "1"


def test_every_bad_run_is_named_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(TrialError, match="unknown preset nope"):
        cp.entries(cp.CampaignSpec(presets=("safe", "nope")))
    with pytest.raises(TrialError, match="unknown nemesis meteor"):
        cp.entries(cp.CampaignSpec(presets=("safe",), nemesis=("meteor",)))


def test_config_files_are_found_beside_the_campaign_file(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text("producer:\n  acks: '1'\n  idempotence: false\n")
    camp = tmp_path / "c.yaml"
    camp.write_text("configs: [mine.yaml]\nseeds: [7]\n")
    spec = cp.load_campaign(camp, {})
    (e,) = cp.entries(spec, camp)
    assert e.key == "mine-s7" and e.config["producer"]["acks"] == "1"


def test_a_campaign_records_every_run_and_exits_with_the_worst_verdict(tmp_path: Path) -> None:
    spec = cp.CampaignSpec(presets=("safe", "acks0"), seeds=2)
    runs = FakeRuns()
    state = cp.run_campaign(spec, tmp_path, runs, say=lambda s: None)
    assert runs.ran == [("safe", 0), ("safe", 1), ("acks0", 0), ("acks0", 1)]
    assert state.status == "done" and state.exit_code == 1
    saved = json.loads((tmp_path / "campaign.json").read_text())
    assert saved["runs"]["acks0-s1"]["forbidden"] == {"lost-write": 3}
    assert saved["runs"]["safe-s0"]["verdict"] == "valid"
    table = summary_table(CampaignState.load(tmp_path))
    assert "acks0-s0" in table and "INVALID" in table and "lost-write 3" in table
    index = write_index(tmp_path, CampaignState.load(tmp_path)).read_text()
    assert '<a href="acks0-s1/report.html">acks0-s1</a>' in index
    assert "<td>C1</td>" in index  # acks0's claim


def test_an_interrupted_campaign_keeps_what_finished_and_resumes_the_rest(
    tmp_path: Path,
) -> None:
    spec = cp.CampaignSpec(presets=("safe", "acks0"))
    first = FakeRuns(interrupt_at=1)
    with pytest.raises(KeyboardInterrupt):
        cp.run_campaign(spec, tmp_path, first, say=lambda s: None)
    saved = json.loads((tmp_path / "campaign.json").read_text())
    assert saved["status"] == "interrupted"
    assert saved["runs"]["safe-s0"]["status"] == "done"
    assert saved["runs"]["acks0-s0"]["status"] == "interrupted"
    second = FakeRuns()
    state = cp.run_campaign(spec, tmp_path, second, resume=True, say=lambda s: None)
    assert second.ran == [("acks0", 0)]  # only what was missing
    assert state.status == "done" and state.exit_code == 1
    # The interrupted attempt's history is kept beside the new run.
    kept = tmp_path / "acks0-s0.interrupted-1" / "history.jsonl"
    assert kept.read_text() == '{"partial": true}\n'


def test_worst_verdict_order() -> None:
    assert cp.worst([0, 2, 0]) == 2 and cp.worst([2, 1]) == 1 and cp.worst([1, 3]) == 3
    assert cp.worst([]) == 0


def test_campaign_command_refuses_a_bad_matrix_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["campaign", "--presets", "safe,nope", "--runs-dir", str(tmp_path)])
    assert code == 3
    assert "unknown preset nope" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing started


EXAMPLE_CAMPAIGNS = Path(__file__).resolve().parents[2] / "examples" / "campaigns"


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLE_CAMPAIGNS.glob("*.yaml")))
def test_the_example_campaigns_are_valid(name: str) -> None:
    path = EXAMPLE_CAMPAIGNS / name
    es = cp.entries(cp.load_campaign(path, {}), path)
    assert es


def test_the_claims_and_storage_campaigns_run_every_preset() -> None:
    from kafka_trial.harness.presets import CLAIMS, PRESETS

    def presets(name: str) -> set[str]:
        path = Path(__file__).resolve().parents[2] / "examples" / "campaigns" / name
        return {e.key.rsplit("-s", 1)[0] for e in cp.entries(cp.load_campaign(path, {}), path)}

    claims, storage = presets("claims.yaml"), presets("storage.yaml")
    hunts = presets("hunt-eos.yaml") | presets("hunt-txn.yaml")
    assert claims | storage | hunts | presets("membership.yaml") == set(PRESETS)
    # Every claim of shared/CLAIMS.md is in the claims campaign; C14 too. A hunt
    # aims at one of them again.
    ids = {CLAIMS[n].id for n in PRESETS if CLAIMS[n].id.startswith("C")}
    assert ids <= {CLAIMS[n].id for n in claims}


def test_runs_sharing_a_broker_side_run_together_for_the_warm_cluster() -> None:
    spec = cp.CampaignSpec(presets=("safe", "acks1"), kafka_versions=("4", "3.9"))
    keys = [e.key for e in cp.entries(spec)]
    # The matrix alternates versions; the run order does not, so one restart suffices.
    assert keys == ["safe-s0-k4", "acks1-s0-k4", "safe-s0-k3.9", "acks1-s0-k3.9"]


def test_savings_are_warm_readiness_against_the_mean_cold_start() -> None:
    state = CampaignState.model_validate(
        {
            "spec": {},
            "runs": {
                "a": {"run_dir": "a", "warm_cluster": False, "cluster_ready_s": 12.0},
                "b": {"run_dir": "b", "warm_cluster": True, "cluster_ready_s": 0.5},
                "c": {"run_dir": "c", "warm_cluster": True, "cluster_ready_s": 1.5},
                "d": {"run_dir": "d", "status": "interrupted"},
            },
        }
    )
    got = cp.cluster_savings(state)
    assert got == {
        "runs": 3,
        "started": 1,
        "warm": 2,
        "mean_cold_ready_s": 12.0,
        "mean_warm_ready_s": 1.0,
        "saved_s": 22.0,
    }
    assert "1 started for 3 runs" in savings_line(got)
    assert savings_line(cp.cluster_savings(CampaignState(spec={}))) == ""


def test_a_run_that_crashes_is_recorded_and_the_campaign_goes_on(tmp_path: Path) -> None:
    class Crashing(FakeRuns):
        def __call__(self, spec: RunSpec, run_dir: Path) -> Results:
            if spec.name == "safe":
                raise ValueError("a bug")
            return super().__call__(spec, run_dir)

    runs = Crashing()
    state = cp.run_campaign(cp.CampaignSpec(presets=("safe", "acks0")), tmp_path, runs, say=print)
    assert runs.ran == [("acks0", 0)]
    assert state.runs["safe-s0"].verdict == "error"
    assert "ValueError: a bug" in (state.runs["safe-s0"].error or "")
    assert state.exit_code == 3


class Overlapped(FakeRuns):
    """run_one only runs; judge gives the results. Run 2 waits until run 1's judging
    has started, and run 1's judging waits until run 2 has started: if the campaign
    judged before running on, both waits would time out."""

    def __init__(self, interrupt_at: int | None = None, judge_blocks: bool = False) -> None:
        super().__init__(interrupt_at)
        self.judged: list[str] = []
        self.judging_started = threading.Event()
        self.second_started = threading.Event()
        self.overlapped: list[bool] = []
        self.release = threading.Event()
        self.judge_blocks = judge_blocks
        self.statuses: list[str | None] = []

    def __call__(self, spec: RunSpec, run_dir: Path) -> None:
        if self.ran:
            self.second_started.set()
            self.overlapped.append(self.judging_started.wait(10))
        super().__call__(spec, run_dir)
        (run_dir / "name").write_text(spec.name)

    def judge(self, run_dir: Path) -> Results:
        self.judging_started.set()
        status("analysis: in the background")
        if not self.judged:
            self.overlapped.append(self.second_started.wait(10))
        if self.judge_blocks:
            self.release.wait(10)
        self.judged.append(run_dir.name)
        name = (run_dir / "name").read_text()
        if name == "leader-epoch":
            raise ValueError("a checker bug")
        return _results(False, 3) if name == "acks0" else _results(True)


def test_each_run_is_judged_while_the_next_one_runs(tmp_path: Path) -> None:
    runs = Overlapped()
    set_status_sink(runs.statuses.append)
    try:
        spec = cp.CampaignSpec(presets=("safe", "acks0", "leader-epoch"))
        state = cp.run_campaign(spec, tmp_path, runs, say=lambda s: None, judge=runs.judge)
    finally:
        set_status_sink(None)
    assert runs.overlapped == [True, True, True]
    assert runs.judged == ["safe-s0", "acks0-s0", "leader-epoch-s0"]  # in the order they ran
    saved = json.loads((tmp_path / "campaign.json").read_text())
    assert saved["runs"]["safe-s0"]["verdict"] == "valid"
    assert saved["runs"]["acks0-s0"]["forbidden"] == {"lost-write": 3}
    # A crash while judging is that run's verdict, not the campaign's end.
    assert saved["runs"]["leader-epoch-s0"]["verdict"] == "error"
    assert "ValueError: a checker bug" in saved["runs"]["leader-epoch-s0"]["error"]
    assert all(r["status"] == "done" and "judge_s" in r for r in saved["runs"].values())
    assert state.exit_code == 3
    # The background judge never took the status line from the run in front.
    assert "analysis: in the background" not in runs.statuses


def test_a_run_interrupted_before_it_was_judged_is_judged_on_resume_not_run_again(
    tmp_path: Path,
) -> None:
    spec = cp.CampaignSpec(presets=("safe", "acks0"))
    first = Overlapped(interrupt_at=1, judge_blocks=True)
    first.judging_started.set()  # the interrupted second run must not wait for it
    with pytest.raises(KeyboardInterrupt):
        cp.run_campaign(spec, tmp_path, first, say=lambda s: None, judge=first.judge)
    saved = json.loads((tmp_path / "campaign.json").read_text())
    assert saved["status"] == "interrupted"
    assert saved["runs"]["safe-s0"]["status"] == "ran"  # its judging was still going on
    assert saved["runs"]["acks0-s0"]["status"] == "interrupted"
    first.release.set()
    second = Overlapped()
    second.judging_started.set()
    second.second_started.set()
    state = cp.run_campaign(spec, tmp_path, second, resume=True, say=print, judge=second.judge)
    assert second.ran == [("acks0", 0)]  # safe ran before: judged, not run again
    assert sorted(second.judged) == ["acks0-s0", "safe-s0"]
    assert state.status == "done" and state.exit_code == 1
    assert state.runs["safe-s0"].verdict == "valid"


def test_the_index_names_the_claim_of_a_run_whose_nemesis_was_overridden(
    tmp_path: Path,
) -> None:
    """The key is `safe-kill-s0`: the claim comes from the run's own name (safe: C4),
    not from cutting the key at "-s" (which gave "safe-kill", no claim)."""
    spec = cp.CampaignSpec(presets=("safe", "acks0"), nemesis=("kill",))
    state = cp.run_campaign(spec, tmp_path, FakeRuns(), say=lambda s: None)
    assert state.order == ["safe-kill-s0", "acks0-kill-s0"]
    assert state.runs["safe-kill-s0"].name == "safe"
    assert state.runs["safe-kill-s0"].source == "safe"
    index = write_index(tmp_path, CampaignState.load(tmp_path)).read_text()
    assert '<a href="safe-kill-s0/report.html">safe-kill-s0</a></td><td>C4</td>' in index
    assert '<a href="acks0-kill-s0/report.html">acks0-kill-s0</a></td><td>C1</td>' in index


@pytest.mark.parametrize("seeds", ["0", "-2"])
def test_an_empty_matrix_is_a_setup_problem_not_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seeds: str
) -> None:
    code = main(["campaign", "--presets", "safe", "--seeds", seeds, "--runs-dir", str(tmp_path)])
    assert code == 3
    err = capsys.readouterr().err
    assert f"the campaign's matrix is empty (seeds: {seeds})" in err and "--seeds 1" in err
    assert not any(tmp_path.iterdir())


def test_a_setup_problem_says_why_on_the_terminal_and_the_table_cuts_nothing(
    tmp_path: Path,
) -> None:
    class NoVersion(FakeRuns):
        def __call__(self, spec: RunSpec, run_dir: Path) -> Results:
            if spec.name == "acks1":
                raise TrialError("no Kafka 9.9 on Maven Central", "pick a released version")
            return super().__call__(spec, run_dir)

    said: list[str] = []
    spec = cp.CampaignSpec(presets=("safe", "acks0", "acks1"))
    state = cp.run_campaign(spec, tmp_path, NoVersion(), say=said.append)
    assert any("setup problem" in s and "no Kafka 9.9 on Maven Central" in s for s in said)
    table = summary_table(state)
    head, *rows = table.splitlines()
    assert head.split()[:4] == ["run", "verdict", "faults", "claim"]
    # A whole error and the claim borne out or not: acks0 (C1) lost writes, safe (C4)
    # held, acks1 never ran.
    assert "no Kafka 9.9 on Maven Central -- fix: pick a released version" in table
    by_run = {r.split()[0]: r for r in rows}
    assert "C1 yes" in by_run["acks0-s0"] and "C4 yes" in by_run["safe-s0"]
    assert " C2 ? " in by_run["acks1-s0"] and by_run["acks1-s0"].split()[1] == "setup"
    assert state.runs["safe-s0"].faults_injected == 0
