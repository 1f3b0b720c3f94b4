"""Whole campaigns, judged by the Spark checker: one safe, one that must lose data."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_trial.contracts.history import read_history
from kafka_trial.spark_analysis.job import analyze

from tests.integration.runs import run_in_child


def _run(tmp_path: Path, data: dict) -> tuple[Path, dict]:
    run_dir = run_in_child(tmp_path, data)
    return run_dir, analyze(run_dir)


def _counts(res: dict) -> dict[str, int]:
    return {k: v["count"] for k, v in res["anomalies"].items()}


@pytest.mark.slow
def test_safe_config_keeps_every_acknowledged_write(tmp_path: Path, images) -> None:
    """Claim C4, issue 2 (a): acks=all, idempotence, RF=3, min.isr=2, no unclean
    election, under repeated leader kills and broker isolation."""
    run_dir, res = _run(
        tmp_path,
        {
            "name": "safe",
            "seed": 4,
            "duration_s": 50,
            "topic": {"partitions": 3, "min_insync_replicas": 2},
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {"faults": ["kill-leader", "isolate-broker"], "fault_s": 7, "quiet_s": 4},
        },
    )
    c = _counts(res)
    ops = read_history(run_dir / "history.jsonl").ops
    faults = [
        o for o in ops if o.process == "nemesis" and o.type == "ok" and o.f in ("kill", "partition")
    ]
    assert {o.f for o in faults} == {"kill", "partition"}, "both fault kinds must have run"
    assert len(faults) >= 3
    assert res["stats"]["send_outcomes"].get("ok", 0) > 1000
    assert c["lost-write"] == 0
    assert c["duplicate"] == 0
    assert res["valid"] is True, (c, res["problems"])


@pytest.mark.slow
def test_lone_leader_then_unclean_election_loses_acknowledged_writes(
    tmp_path: Path, images
) -> None:
    """Claim C5, issue 2 (b): isolate the leader from its followers until the ISR is
    the leader alone, write, kill it, and let an out-of-sync replica lead."""
    run_dir, res = _run(
        tmp_path,
        {
            "name": "lossy",
            "seed": 1,
            "duration_s": 25,
            "topic": {"partitions": 1, "min_insync_replicas": 1, "unclean_leader_election": True},
            "producer": {"acks": "1", "idempotence": False},
            "nemesis": {"faults": ["unclean-failover"], "fault_s": 6, "quiet_s": 4},
        },
    )
    c = _counts(res)
    ops = read_history(run_dir / "history.jsonl").ops
    done = [(o.f, o.type) for o in ops if o.process == "nemesis" and o.type != "invoke"]
    for step in ("partition", "await-isr-shrink", "kill", "elect-unclean", "start"):
        assert (step, "ok") in done, f"nemesis step {step} did not succeed: {done}"
    assert c["lost-write"] > 0
    assert res["valid"] is False
    assert "lost-write" in res["forbidden_seen"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("isolation", "aborted_reads"), [("read_uncommitted", True), ("read_committed", False)]
)
def test_transactions_aborts_visible_only_to_read_uncommitted(
    tmp_path: Path, images, isolation: str, aborted_reads: bool
) -> None:
    """Claim C10: read_committed never sees aborted records; read_uncommitted does."""
    run_dir, res = _run(
        tmp_path,
        {
            "name": f"txn-{isolation}",
            "duration_s": 15,
            "producer": {
                "transactional": True,
                "abort_fraction": 0.3,
                "workers": 2,
                "batch": 6,
                "txn_partitions": 3,
            },
            "consumer": {"workers": 1, "isolation_level": isolation},
            "nemesis": {"faults": []},
            "check": {"allowed": ["aborted-read"]},
        },
    )
    c = _counts(res)
    ops = read_history(run_dir / "history.jsonl").ops
    txns = [o for o in ops if o.f == "txn" and o.type != "invoke"]
    assert {o.type for o in txns} >= {"ok", "fail"}, "need committed and aborted txns"
    assert (c["aborted-read"] > 0) is aborted_reads, c
    assert c["torn-txn"] == 0 and c["lost-write"] == 0 and c["poll-skip"] == 0
    assert c["nonmonotonic-poll"] == 0 and c["int-nonmonotonic-poll"] == 0
    assert c["int-poll-skip"] == 0 and c["vanished-read"] == 0
    assert res["valid"] is True


def _preset_run(tmp_path: Path, name: str, extra: dict) -> tuple[Path, dict]:
    from kafka_trial.harness.presets import preset
    from kafka_trial.harness.spec import _merge

    return _run(tmp_path, _merge(preset(name), extra))


@pytest.mark.slow
def test_auto_commit_with_crashes_misses_messages(tmp_path: Path, images) -> None:
    """Claim C16: auto-commit commits what was polled, so a crash before processing
    loses those messages for the application."""
    run_dir, res = _preset_run(
        tmp_path,
        "auto-commit",
        {"duration_s": 20, "consumer": {"crash_fraction": 0.3}, "nemesis": {"faults": []}},
    )
    c = _counts(res)
    ops = read_history(run_dir / "history.jsonl").ops
    assert any(o.f == "crash" for o in ops) and any(o.f == "group-offsets" for o in ops)
    assert c["group-missed"] > 0
    assert c["lost-write"] == 0
    assert res["valid"] is True  # expected by the preset, so allowed


@pytest.mark.slow
def test_commit_after_processing_redelivers_but_never_misses(tmp_path: Path, images) -> None:
    """Claim C17: commit after processing is at-least-once: crashes between processing
    and commit redeliver, and nothing committed is left unprocessed."""
    _, res = _preset_run(
        tmp_path,
        "commit-after-process",
        {"duration_s": 20, "consumer": {"crash_fraction": 0.3}, "nemesis": {"faults": []}},
    )
    c = _counts(res)
    assert c["group-redelivered"] > 0
    assert c["group-missed"] == 0
    assert res["valid"] is True


@pytest.mark.slow
def test_eos_copier_with_crashes_copies_exactly_once(tmp_path: Path, images) -> None:
    """Claim C11: consume-transform-produce with send_offsets_to_transaction loses and
    duplicates nothing in its output, though copiers crash mid-transaction."""
    run_dir, res = _preset_run(
        tmp_path,
        "eos-copier",
        {"duration_s": 20, "copier": {"crash_fraction": 0.2}, "nemesis": {"faults": []}},
    )
    c = _counts(res)
    ops = read_history(run_dir / "history.jsonl").ops
    copies = [o for o in ops if o.f == "txn" and o.type != "invoke"]
    assert any(o.type == "ok" for o in copies)
    assert any(o.error == "copier crashed before commit" for o in copies), "need crashes"
    offsets = [o for o in ops if o.f == "group-offsets" and o.type == "ok"]
    assert offsets and any(x["offset"] for x in offsets[0].value[0]["offsets"])
    assert c["eos-output-lost"] == 0 and c["eos-output-duplicate"] == 0
    assert res["valid"] is True, c
