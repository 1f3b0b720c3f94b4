"""Every preset under its own faults on real Kafka, judged by the Spark checker.

Each case asserts what the preset's claim (shared/CLAIMS.md) says must hold. Where
a claim says an anomaly "should be observable in some runs", the test insists on it
only when these settings reproduce it in every run we have seen; otherwise the run
must still complete, apply its faults and give a definite verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka_trial.contracts.history import read_history
from kafka_trial.contracts.ops import Op
from kafka_trial.harness.presets import PRESETS, preset
from kafka_trial.harness.spec import _merge
from kafka_trial.spark_analysis.job import analyze

from tests.integration.runs import run_in_child


@dataclass(frozen=True)
class Expect:
    seen: tuple[str, ...] = ()  # must be found
    absent: tuple[str, ...] = ()  # must not be found, even if the preset allows it
    valid: bool = False  # the preset's whole expectation holds: nothing forbidden seen
    client_fs: tuple[str, ...] = ()  # client events the workload must have recorded


EXPECT: dict[str, Expect] = {
    "safe": Expect(absent=("lost-write", "duplicate"), valid=True),  # C4
    "acks0": Expect(),  # C1
    "acks1": Expect(),  # C2
    "min-isr-1": Expect(),  # C3
    "unclean": Expect(),  # C5; the lossy sequence is asserted in test_campaigns
    "no-idempotence-retries": Expect(seen=("duplicate",)),  # C6
    "inflight-reorder": Expect(),  # C7
    "idempotent-retries": Expect(absent=("duplicate", "reorder"), valid=True),  # C8
    "producer-restart-resend": Expect(seen=("duplicate",)),  # C9
    "txn": Expect(absent=("aborted-read", "torn-txn"), valid=True),  # C10
    "eos-copier": Expect(valid=True),  # C11
    "leader-epoch": Expect(absent=("inconsistent-offsets",), valid=True),  # C12
    "hw-visibility": Expect(absent=("vanished-read",), valid=True),  # C13
    "auto-commit": Expect(client_fs=("crash",)),  # C16
    "commit-after-process": Expect(
        seen=("group-redelivered",), absent=("group-missed",), client_fs=("crash",)
    ),  # C17
    "rebalance": Expect(
        seen=("group-redelivered",), absent=("group-missed",), client_fs=("leave", "join", "stall")
    ),  # C18
    "commit-before-process": Expect(seen=("group-missed",), client_fs=("crash",)),  # C19
}


FAULT_FS = ("kill", "stop", "pause", "bounce", "partition", "degrade", "wipe", "elect-unclean")


def _run(tmp_path: Path, data: dict) -> tuple[list[Op], dict]:
    run_dir = run_in_child(tmp_path, data)
    return read_history(run_dir / "history.jsonl").ops, analyze(run_dir)


def _counts(res: dict) -> dict[str, int]:
    return {k: v["count"] for k, v in res["anomalies"].items()}


def test_every_preset_has_an_expectation() -> None:
    assert set(EXPECT) == set(PRESETS)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPECT))
def test_preset_under_its_faults(tmp_path: Path, images, name: str) -> None:
    ops, res = _run(tmp_path, _merge(preset(name), {"duration_s": 25, "seed": 3}))
    c = _counts(res)
    want = EXPECT[name]
    faults = [
        o
        for o in ops
        if o.process == "nemesis"
        and o.type == "ok"
        and isinstance(o.value, dict)
        and "brokers" in o.value
    ]
    assert any(o.f in FAULT_FS for o in faults), "no fault was applied"
    assert res["stats"]["send_outcomes"].get("ok", 0) > 100, res["stats"]
    # Clients outlive the faults: writes are acknowledged after the last one too.
    last_fault = max(o.time for o in faults if o.f in FAULT_FS)
    assert any(o.f in ("send", "txn") and o.type == "ok" and o.time > last_fault for o in ops)
    assert None not in c.values(), f"a check crashed: {c}"
    assert res["problems"] == [], res["problems"]
    for f in want.client_fs:
        assert any(o.f == f for o in ops), f"no {f} op recorded"
    for a in want.seen:
        assert c[a] > 0, (a, c)
    for a in want.absent:
        assert c[a] == 0, (a, c)
    if want.valid:
        assert res["valid"] is True, (c, res["forbidden_seen"])
    else:
        assert res["valid"] in (True, False), res


@pytest.mark.slow
def test_restart_without_resend_does_not_duplicate(tmp_path: Path, images) -> None:
    """C9's twin: the same crashes without the application's resend give no duplicates,
    so the resend (a new idempotence session) is what duplicates."""
    ops, res = _run(
        tmp_path,
        _merge(
            preset("producer-restart-resend"),
            {"duration_s": 20, "producer": {"resend_unacked": False}, "nemesis": {"faults": []}},
        ),
    )
    crashed = [o for o in ops if o.f == "send" and o.error == "client crashed"]
    assert len(crashed) >= 5
    assert not any(m.get("resend") for o in ops if o.f == "send" for m in o.value)
    assert _counts(res)["duplicate"] == 0
    assert res["valid"] is True


@pytest.mark.slow
@pytest.mark.parametrize(
    ("isolation", "precommitted"), [("read_uncommitted", True), ("read_committed", False)]
)
def test_transactions_reading_their_own_writes(
    tmp_path: Path, images, isolation: str, precommitted: bool
) -> None:
    """A transaction that polls its own partitions before it ends sees its own sends
    only with read_uncommitted (Jepsen's precommitted-read)."""
    ops, res = _run(
        tmp_path,
        {
            "name": f"txn-poll-{isolation}",
            "duration_s": 15,
            "producer": {"transactional": True, "txn_poll": True, "workers": 2, "batch": 6},
            "consumer": {"isolation_level": isolation},
            "nemesis": {"faults": []},
            "check": {"allowed": ["precommitted-read"]},
        },
    )
    txns = [o for o in ops if o.f == "txn" and o.type == "ok"]
    assert len(txns) >= 5
    assert all(m["op"] == "poll" for m in (o.value[-1] for o in txns))
    c = _counts(res)
    assert (c["precommitted-read"] > 0) is precommitted, c
    assert c["aborted-read"] == 0 and c["torn-txn"] == 0 and c["lost-write"] == 0
