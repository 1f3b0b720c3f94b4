"""docs/api.md's example, run for real: a cluster, a fault, a recorded workload and
its verdict, through the public API only."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from kafka_trial.contracts.history import read_history
from kafka_trial.contracts.log import log

from tests.integration.conftest import containers_with_label

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "api_example.py"


def test_the_api_example_runs_a_fault_and_judges_the_history(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("api_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    results = example.main(tmp_path, fault_s=8)
    log(f"api example: {results.valid} {results.stats.send_outcomes}")
    ops = read_history(tmp_path / "history.jsonl").ops
    nemesis = [(o.type, o.f) for o in ops if o.process == "nemesis"]
    assert ("ok", "kill") in nemesis and ("ok", "start") in nemesis
    assert nemesis[-2:] == [("invoke", "heal-all"), ("ok", "heal-all")]
    acked = results.stats.send_outcomes.get("ok", 0)
    assert acked > 100, results.stats
    # acks=all with idempotence under one leader kill: nothing lost or duplicated (C4).
    assert results.valid is True, results.forbidden_seen
    assert (tmp_path / "results.json").is_file()
    # The cluster is gone again (other processes' runs on this engine are theirs).
    assert containers_with_label(f"kafka-trial.owner-pid={os.getpid()}") == []
