"""put_on_trial's spec and the trial_app fixture (the real runs are
tests/integration/test_apps.py's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka_trial.contracts.errors import TrialError
from kafka_trial.harness import trial


def test_the_spec_puts_the_command_on_trial_under_the_faults() -> None:
    spec = trial.app_spec(
        command="python -m svc",
        guarantee="exactly-once",
        faults=["kill-leader", "app-kill"],
        duration_s=40,
        settings={"app": {"per_key_order": True}, "producer": {"target_rate": 500}},
    )
    assert (spec.app.command, spec.app.guarantee, spec.app.instances) == (
        "python -m svc",
        "exactly-once",
        2,
    )
    assert spec.app.per_key_order is True and spec.producer.target_rate == 500
    assert spec.nemesis.faults == ("kill-leader", "app-kill") and spec.duration_s == 40
    # The input is keyed by partition, so per-key order means per input partition.
    assert spec.producer.partition_keys is True


def test_a_guarantee_that_is_not_one_of_the_three_is_refused_before_anything_runs() -> None:
    with pytest.raises(TrialError) as e:
        trial.app_spec(command="true", guarantee="twice-a-day")
    assert "guarantee" in str(e.value)


def test_the_fixture_runs_the_trial_under_the_test_s_tmp_path(
    trial_app: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(trial, "put_on_trial", lambda **kw: seen.update(kw) or "results")
    assert trial_app(command="python -m svc", guarantee="at-least-once") == "results"
    assert seen["runs_dir"] == tmp_path / "kafka-trial"
    assert (seen["command"], seen["guarantee"]) == ("python -m svc", "at-least-once")
