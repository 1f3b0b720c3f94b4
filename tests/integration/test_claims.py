"""Every preset under its own faults on real Kafka, judged by the Spark checker.

Each case asserts what the preset's claim (shared/CLAIMS.md) says must hold. Where
a claim says an anomaly "should be observable in some runs", the test insists on it
only when these settings reproduce it in every run we have seen; otherwise the run
must still complete, apply its faults and give a definite verdict.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from junitparser import JUnitXml
from kafka_trial.checkers.results import Results
from kafka_trial.contracts.history import read_history
from kafka_trial.contracts.ops import Op
from kafka_trial.contracts.schedule import write_schedule
from kafka_trial.harness import cli
from kafka_trial.harness.presets import PRESETS, preset
from kafka_trial.harness.runner import fault_schedule
from kafka_trial.harness.spec import merge_config
from kafka_trial.nemesis.catalog import FAULT_OPS

from tests.integration.conftest import containers_of
from tests.integration.runs import stop_stuck
from tests.results import ran


@dataclass(frozen=True)
class Expect:
    seen: tuple[str, ...] = ()  # must be found
    seen_any: tuple[str, ...] = ()  # one of these must be found
    absent: tuple[str, ...] = ()  # must not be found, even if the preset allows it
    valid: bool = False  # the preset's whole expectation holds: nothing forbidden seen
    client_fs: tuple[str, ...] = ()  # client events the workload must have recorded
    # Printed when `absent` fails: what is known of a violation seen before, so that a
    # reader of a red suite knows it is an open finding, not a new harness bug.
    open_finding: str = ""
    # Writes are acknowledged after the last fault. Not after a power loss of every
    # broker: nothing is acknowledged for ~25 s (docs/findings.md, C14), more than
    # is left of the run after its one loss at 15 s.
    recovers: bool = True


EXPECT: dict[str, Expect] = {
    "safe": Expect(absent=("lost-write", "duplicate"), valid=True),  # C4
    "acks0": Expect(),  # C1
    "acks1": Expect(),  # C2
    "min-isr-1": Expect(),  # C3
    "unclean": Expect(seen=("lost-write",)),  # C5; and test_unclean_election_follows_...
    # C6. It reorders too, in 4 of 8 hunt runs, though 1 request is in flight
    # (docs/findings.md, "C7's other half"): not asserted either way.
    "no-idempotence-retries": Expect(seen=("duplicate",)),
    # C7: client-reorder 12-14 in each of 3 runs of 25 s with socket.max.fails 0; with
    # librdkafka's default 4-11 in 8 runs, yet 0 in one suite run (docs/findings.md).
    # Either reorder kind bears the claim out.
    "inflight-reorder": Expect(seen=("duplicate",), seen_any=("client-reorder", "reorder")),
    "idempotent-retries": Expect(
        absent=("duplicate", "reorder", "client-reorder"), valid=True
    ),  # C8
    "producer-restart-resend": Expect(seen=("duplicate",)),  # C9
    "txn": Expect(absent=("aborted-read", "torn-txn"), valid=True),  # C10
    "eos-copier": Expect(
        # C11 is about the output. The input producer's own duplicates (librdkafka's
        # idempotent producer after message timeouts, docs/findings.md) are C8's
        # matter: seen in 1 of 5 hunt runs of this preset on an overloaded machine.
        absent=(
            "eos-output-lost",
            "eos-output-duplicate",
            "torn-txn",
            "aborted-read",
            "lost-write",
        ),
        open_finding=(
            "C11 was seen violated once before (docs/findings.md, 'C11 seen violated "
            "once'): after a coordinator failover a copier's consumer started input "
            "partition 2 at offset 0 instead of the committed 500, while another "
            "transactional id had offsets for it pending. The cause is open: the hunt of "
            "issue 28 (examples/campaigns/hunt-eos.yaml) did not bring it back. Keep "
            "this run's directory and its broker logs for that finding"
        ),
    ),  # C11; and test_eos_copier_crashes_...
    "leader-epoch": Expect(absent=("inconsistent-offsets",), valid=True),  # C12
    "hw-visibility": Expect(absent=("vanished-read",), valid=True),  # C13
    "auto-commit": Expect(
        seen=("group-missed",),
        absent=("lost-write",),
        valid=True,
        client_fs=("crash", "group-offsets"),
    ),  # C16
    "commit-after-process": Expect(
        seen=("group-redelivered",), absent=("group-missed",), valid=True, client_fs=("crash",)
    ),  # C17
    "rebalance": Expect(
        seen=("group-redelivered",), absent=("group-missed",), client_fs=("leave", "join", "stall")
    ),  # C18
    "commit-before-process": Expect(seen=("group-missed",), client_fs=("crash",)),  # C19
    # KAFKA-17754: not reproduced in any run so far (docs/findings.md), so nothing
    # is asserted either way beyond a run under its faults with a definite verdict.
    "txn-delayed-produce": Expect(),
    # Reads of open transactions (read_uncommitted) close G1c cycles, allowed: what is
    # asserted is a definite verdict over real wr edges (txn-poll-read_committed, the
    # twin below, must show none).
    "txn-cycles": Expect(valid=True),
    # C14: a power failure of every replica loses what none had fsynced: in one run
    # of the preset (40 s) 16,109 of 17,069 acknowledged values were lost.
    "power-loss": Expect(seen=("lost-write",), recovers=False),
    # C14's twin: flush.messages=1, no acknowledged value lost.
    "power-loss-fsync": Expect(absent=("lost-write",), valid=True, recovers=False),
}


# The nemesis ops that are faults, as the catalog pairs them with their heals.
FAULT_FS = tuple(FAULT_OPS)


# The claims table is a campaign (examples/campaigns/claims.yaml runs the same one):
# every preset plus the twins below, one after another on one warm cluster, judged
# in the campaign's own process. Each test then asserts on its own run.
SEED = 3
RUN_S = 20
# The twins without faults only need enough transactions or crashes: in 25 s they
# had 112 to 1,219 transactions and 66 crashes.
NO_FAULTS_S = 10
# A member stalled past max.poll.interval (the first stall comes at 8-12 s) is
# dropped about 6 s later, and what it had processed but not committed is delivered
# again after that rebalance, once some member can read the partition. At 20 s one
# run ended before it; at 30 s one ended first too: the second kill-leader (20-28 s)
# took the partition's leader just as it was reassigned, and the group was still
# moving it when the run ended (group-redelivered 0). At 40 s no third fault fits
# (nemesis/schedule.py), so the last 12 s are quiet for the group to settle.
LONGER_S = {"rebalance": 40}
# Values/s offered in the suite by the presets whose tests need no volume: a definite
# verdict alone (acks0, acks1, min-isr-1), or an anomaly that seconds of writes show
# (unclean's lost writes, rebalance's redeliveries). At the default 15,000 these five
# wrote 210K of the campaign's 383K history lines, and their judges took 265 s of
# the suite's CPU-bound 35 minutes (stop 39's CI). examples/campaigns/claims.yaml
# runs them at the default.
FEWER_VALUES = ("acks0", "acks1", "min-isr-1", "unclean", "rebalance")
FEWER_RATE = 5000
CYCLES = ["G1c", "G1c-process", "G1c-realtime"]
TWINS: dict[str, dict] = {
    # C4 under repeated faults of both kinds: the preset's faults fit once in the suite's 20 s.
    "safe-repeated": {
        "topic": {"partitions": 3, "min_insync_replicas": 2},
        "producer": {"acks": "all", "idempotence": True},
        # With seed 3 in 20 s: kill-leader at 3 s, isolate-broker at 8 s, kill-leader at
        # 18 s (nemesis/schedule.py; one period draws no fault). Short faults and long
        # gaps: with min.isr 2, writes stall while a restarted broker is out of the ISR,
        # and with 4 s faults 2 s apart a run acknowledged only 300 values in all.
        "nemesis": {"faults": ["kill-leader", "isolate-broker"], "fault_s": 2, "quiet_s": 3},
    },
    # C10: aborted transactions are seen by read_uncommitted only.
    **{
        f"txn-aborts-{isolation}": {
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
        }
        for isolation in ("read_uncommitted", "read_committed")
    },
    # A transactional client frozen past its transaction timeout, as a GC pause would
    # freeze it (issue 28): its producer runs in a process of its own. The coordinator
    # looks for timed-out transactions every 10 s (Kafka's default), so a 10 s pause
    # outlasts the 2 s timeout, and may outlast the coordinator's next look.
    "txn-client-pause": {
        "producer": {
            "transactional": True,
            "own_process": True,
            "clients": 2,
            "batch": 6,
            "txn_partitions": 3,
            "transaction_timeout_ms": 2000,
            "delivery_timeout_ms": 2000,
        },
        "consumer": {"workers": 1, "isolation_level": "read_committed"},
        "nemesis": {"faults": ["client-pause"], "fault_s": 10, "quiet_s": 8},
        "check": {"allowed": []},
        "duration_s": 26,  # a pause at 8-18 s, and time after it to commit again
    },
    # C9's twin: the same crashes without the application's resend.
    "restart-no-resend": merge_config(
        preset("producer-restart-resend"),
        {"producer": {"resend_unacked": False}, "nemesis": {"faults": []}},
    ),
    **{
        f"txn-poll-{isolation}": {
            "producer": {"transactional": True, "txn_poll": True, "workers": 2, "batch": 6},
            "consumer": {"isolation_level": isolation},
            "nemesis": {"faults": []},
            # read_uncommitted: reads of open transactions close cycles (txn-cycles).
            "check": {
                "allowed": ["precommitted-read"]
                + (CYCLES if isolation == "read_uncommitted" else [])
            },
        }
        for isolation in ("read_uncommitted", "read_committed")
    },
}
CAMPAIGN_LIMIT_S = 60 * 60
# (isolation level, whether it sees what the transaction has not committed)
ONLY_UNCOMMITTED_SEES = [("read_uncommitted", True), ("read_committed", False)]


@pytest.fixture(scope="module")
def claims_campaign(tmp_path_factory: pytest.TempPathFactory, images) -> Path:
    """The campaign directory, after every run in it ended."""
    root = tmp_path_factory.mktemp("claims")
    runs = {name: {**preset(name), "duration_s": LONGER_S.get(name, RUN_S)} for name in EXPECT}
    for name in FEWER_VALUES:
        runs[name] = merge_config(runs[name], {"producer": {"target_rate": FEWER_RATE}})
    for name, config in TWINS.items():
        quiet = not config.get("nemesis", {}).get("faults", True)
        runs[name] = {"duration_s": NO_FAULTS_S if quiet else RUN_S, **config}
    # Runs on the write-back filesystem need a cluster of their own: last, so that the
    # warm cluster is replaced once.
    runs = dict(sorted(runs.items(), key=lambda kv: _on_writeback(kv[1])))
    for name, config in runs.items():
        (root / f"{name}.yaml").write_text(yaml.safe_dump({**config, "name": name}))
    (root / "campaign.yaml").write_text(
        yaml.safe_dump(
            {"name": "claims", "configs": [f"{name}.yaml" for name in runs], "seeds": [SEED]}
        )
    )
    cmd = [sys.executable, "-m", "kafka_trial", "campaign", "-c", str(root / "campaign.yaml")]
    cmd += ["--runs-dir", str(root / "runs"), "--junitxml", str(root / "junit.xml")]
    with (root / "stdout").open("w") as out, (root / "stderr").open("w") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err)
        try:
            (root / "exit").write_text(str(child.wait(CAMPAIGN_LIMIT_S)))
        except subprocess.TimeoutExpired:
            stop_stuck(child, root / "runs")
    (camp,) = [p for p in (root / "runs").iterdir() if p.is_dir()]
    return camp


def _on_writeback(config: dict) -> bool:
    return config.get("cluster", {}).get("storage") == "writeback"


def _run(camp: Path, key: str) -> tuple[list[Op], Results]:
    """The run's ops and results; a run the campaign could not finish fails its test
    with the campaign's own account of it."""
    state = json.loads((camp / "campaign.json").read_text())
    entry = state["runs"].get(f"{key}-s{SEED}", {"status": "never started"})
    results = camp / f"{key}-s{SEED}" / "results.json"
    if entry.get("status") != "done" or not results.is_file():
        err = (camp.parent.parent / "stderr").read_text(errors="replace")[-4000:]
        pytest.fail(f"campaign run {key}: {entry}\n{err}", pytrace=False)
    ops = read_history(camp / f"{key}-s{SEED}" / "history.jsonl").ops
    return ops, Results.from_json(results)


def _counts(res: Results) -> dict[str, int | None]:
    return ran(res)


# Presets the storage campaign runs (examples/campaigns/storage.yaml), the membership
# campaign (examples/campaigns/membership.yaml; its packages have real tests of their
# own in test_faults, test_membership and test_fenced_write), and hunts
# (examples/campaigns/hunt-*.yaml), not this one.
ELSEWHERE = {
    "eos-failover",
    "txn-jepsen",
    "disk-full",
    "power-loss-one",
    "corrupt",
    "last-replica",
    "clock-txn",
    "clock-retention",
    "reassign",
    "remove-broker",
    "packet",
    "fence-txn-id",
    "voter-change",
}


def test_every_preset_has_an_expectation() -> None:
    assert set(EXPECT) | ELSEWHERE == set(PRESETS)


@pytest.mark.slow
def test_the_claims_campaign_is_a_campaign(claims_campaign: Path) -> None:
    """`kafka-trial campaign` itself, on this campaign (the suite runs no other, to save
    a cluster): every run judged and reported, the summary, campaign.json, index.html
    and JUnit XML, runs after the first on the cluster the first left warm, and the
    worst verdict as the exit code."""
    root = claims_campaign.parent.parent
    state = json.loads((claims_campaign / "campaign.json").read_text())
    keys = [f"{k}-s{SEED}" for k in [*EXPECT, *TWINS]]
    assert state["status"] == "done", (root / "stderr").read_text()[-3000:]
    assert sorted(state["order"]) == sorted(keys)
    stdout = (root / "stdout").read_text()
    codes = []
    for key in state["order"]:
        r = state["runs"][key]
        assert r["status"] == "done" and "code" in r and r["judge_s"] > 0, r
        assert (claims_campaign / key / "report.html").is_file()
        assert f"{key} " in stdout  # its row of the summary table
        codes.append(r["code"])
    assert int((root / "exit").read_text()) == state["exit_code"]
    assert state["exit_code"] == (1 if 1 in codes else 2 if 2 in codes else 0)
    index = (claims_campaign / "index.html").read_text()
    assert all(f'<a href="{k}/report.html">' in index for k in keys)
    assert [s.name for s in JUnitXml.fromfile(str(root / "junit.xml"))] == state["order"]
    # The second run had the first one's cluster, with its own topic and client ids,
    # and the campaign removed that cluster at its end.
    first, second = state["order"][:2]
    assert [state["runs"][k]["warm_cluster"] for k in (first, second)] == [False, True]
    assert re.search(rf"clusters: \d+ started for {len(keys)} runs", stdout), stdout[-2000:]
    described = [
        json.loads((claims_campaign / k / "cluster.json").read_text()) for k in (first, second)
    ]
    assert described[0]["run_id"] == described[1]["run_id"]
    assert described[0]["client_run_id"] != described[1]["client_run_id"]
    topics = [
        json.loads((claims_campaign / k / "spec.json").read_text())["topic"]["name"]
        for k in (first, second)
    ]
    assert topics[0] != topics[1]
    sent = read_history(claims_campaign / second / "history.jsonl").ops
    assert {
        m["topic"] for o in sent if o.f in ("send", "txn") for m in o.value if "topic" in m
    } == {topics[1]}
    assert containers_of(described[0]["run_id"]) == []
    # The first run was judged while the second one ran, not before it started.
    assert (claims_campaign / first / "results.json").stat().st_mtime > (
        claims_campaign / second / "spec.json"
    ).stat().st_mtime


@pytest.mark.slow
def test_a_real_run_replayed_from_its_spec_json_draws_its_schedule_json(
    claims_campaign: Path,
) -> None:
    """`kafka-trial run --config RUN_DIR/spec.json` draws exactly the fault steps each
    real run wrote, warm clusters' fresh topics and every preset's faults included
    (drawn here, not run again: a second cluster run would cost minutes of the
    suite's budget; tests/unit/test_replay.py round-trips random specs)."""
    state = json.loads((claims_campaign / "campaign.json").read_text())
    compared = 0
    for key in state["order"]:
        run_dir = claims_campaign / key
        if not (run_dir / "schedule.json").is_file():
            continue  # a run that could not start fails its own test
        args = cli.parser().parse_args(["run", "--config", str(run_dir / "spec.json")])
        replay_dir = run_dir.parent.parent.parent / "replays" / key
        replay_dir.mkdir(parents=True)
        write_schedule(replay_dir, fault_schedule(cli._load_spec(args)))
        written = (run_dir / "schedule.json").read_text()
        assert (replay_dir / "schedule.json").read_text() == written, key
        compared += bool(json.loads(written))
    assert compared >= len(EXPECT) // 2  # most runs had faults to compare


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPECT))
def test_preset_under_its_faults(claims_campaign: Path, name: str) -> None:
    ops, res = _run(claims_campaign, name)
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
    assert res.stats.send_outcomes.get("ok", 0) > 100, res.stats
    # Clients outlive the faults: writes are acknowledged after the last one too.
    last_fault = max(o.time for o in faults if o.f in FAULT_FS)
    if want.recovers:
        assert any(o.f in ("send", "txn") and o.type == "ok" and o.time > last_fault for o in ops)
    assert None not in c.values(), f"a check crashed: {c}"
    assert res.problems == (), res.problems
    for f in want.client_fs:
        assert any(o.f == f for o in ops), f"no {f} op recorded"
    for a in want.seen:
        assert c[a] > 0, (a, c)
    if want.seen_any:
        assert any(c[a] > 0 for a in want.seen_any), (want.seen_any, c)
    for a in want.absent:
        assert c[a] == 0, (a, c, want.open_finding or "no earlier finding")
    if want.valid:
        assert res.valid is True, (c, res.forbidden_seen)
    else:
        assert res.valid in (True, False), res


@pytest.mark.slow
def test_restart_without_resend_does_not_duplicate(claims_campaign: Path) -> None:
    """C9's twin: the same crashes without the application's resend give no duplicates,
    so the resend (a new idempotence session) is what duplicates."""
    ops, res = _run(claims_campaign, "restart-no-resend")
    crashed = [o for o in ops if o.f == "send" and o.error == "client crashed"]
    assert len(crashed) >= 5
    assert not any(m.get("resend") for o in ops if o.f == "send" for m in o.value)
    assert _counts(res)["duplicate"] == 0
    assert res.valid is True


@pytest.mark.slow
@pytest.mark.parametrize(("isolation", "precommitted"), ONLY_UNCOMMITTED_SEES)
def test_transactions_reading_their_own_writes(
    claims_campaign: Path, isolation: str, precommitted: bool
) -> None:
    """A transaction that polls its own partitions before it ends sees its own sends
    only with read_uncommitted (Jepsen's precommitted-read)."""
    ops, res = _run(claims_campaign, f"txn-poll-{isolation}")
    txns = [o for o in ops if o.f == "txn" and o.type == "ok"]
    assert len(txns) >= 5
    assert all(m["op"] == "poll" for m in (o.value[-1] for o in txns))
    c = _counts(res)
    assert (c["precommitted-read"] > 0) is precommitted, c
    assert c["aborted-read"] == 0 and c["torn-txn"] == 0 and c["lost-write"] == 0
    if not precommitted:
        # read_committed: no transaction reads another open one, so no cycle of reads.
        assert c["G1c"] == c["G1c-process"] == c["G1c-realtime"] == 0, c
        assert res.valid is True


@pytest.mark.slow
def test_safe_settings_lose_nothing_under_repeated_kills_and_isolation(
    claims_campaign: Path,
) -> None:
    """C4: acks=all, idempotence, RF=3, min.isr=2, no unclean election, under leader
    kills and broker isolation one after another."""
    ops, res = _run(claims_campaign, "safe-repeated")
    faults = [
        o for o in ops if o.process == "nemesis" and o.type == "ok" and o.f in ("kill", "partition")
    ]
    assert {o.f for o in faults} == {"kill", "partition"}, "both fault kinds must have run"
    assert len(faults) >= 3
    assert res.stats.send_outcomes.get("ok", 0) > 1000
    c = _counts(res)
    assert c["lost-write"] == 0 and c["duplicate"] == 0
    assert res.valid is True, (c, res.problems)


@pytest.mark.slow
def test_unclean_election_follows_the_lone_leader_and_loses_acknowledged_writes(
    claims_campaign: Path,
) -> None:
    """C5: isolate the leader from its followers until the ISR is the leader alone,
    write, kill it, and let an out-of-sync replica lead: acknowledged writes are lost."""
    ops, res = _run(claims_campaign, "unclean")
    done = [(o.f, o.type) for o in ops if o.process == "nemesis" and o.type != "invoke"]
    for step in ("partition", "await-isr-shrink", "kill", "elect-unclean", "start"):
        assert (step, "ok") in done, f"nemesis step {step} did not succeed: {done}"
    assert _counts(res)["lost-write"] > 0
    assert "lost-write" in res.allowed_seen and res.valid is True


@pytest.mark.slow
@pytest.mark.parametrize(("isolation", "aborted_reads"), ONLY_UNCOMMITTED_SEES)
def test_aborted_transactions_are_visible_only_to_read_uncommitted(
    claims_campaign: Path, isolation: str, aborted_reads: bool
) -> None:
    """C10: read_committed never sees aborted records; read_uncommitted does."""
    ops, res = _run(claims_campaign, f"txn-aborts-{isolation}")
    txns = [o for o in ops if o.f == "txn" and o.type != "invoke"]
    assert {o.type for o in txns} >= {"ok", "fail"}, "need committed and aborted txns"
    c = _counts(res)
    assert (c["aborted-read"] > 0) is aborted_reads, c
    for a in ("torn-txn", "lost-write", "poll-skip", "nonmonotonic-poll"):
        assert c[a] == 0, (a, c)
    for a in ("int-nonmonotonic-poll", "int-poll-skip", "vanished-read"):
        assert c[a] == 0, (a, c)
    assert res.valid is True


@pytest.mark.slow
def test_eos_copier_crashes_mid_transaction_and_still_copies_exactly_once(
    claims_campaign: Path,
) -> None:
    """C11: consume-transform-produce with send_offsets_to_transaction loses and
    duplicates nothing in its output, though copiers crash mid-transaction."""
    ops, _ = _run(claims_campaign, "eos-copier")
    copies = [o for o in ops if o.f == "txn" and o.type != "invoke"]
    assert any(o.type == "ok" for o in copies)
    assert any(o.error == "copier crashed before commit" for o in copies), "need crashes"
    offsets = [o for o in ops if o.f == "group-offsets" and o.type == "ok"]
    assert offsets and any(x["offset"] for x in offsets[0].value[0]["offsets"])


@pytest.mark.slow
def test_a_frozen_client_holds_its_transaction_open_and_the_history_stays_whole(
    claims_campaign: Path,
) -> None:
    """client-pause: one of two transactional clients, in its own process, frozen for
    10 s, far past its 2 s transaction timeout. While it is frozen the other goes on;
    the frozen one completes nothing, and the op it was in completes only after the
    resume. Every op completes once, and the checker finds nothing forbidden: whatever
    the coordinator did to the open transaction, the history says it consistently."""
    ops, res = _run(claims_campaign, "txn-client-pause")
    pauses = [o for o in ops if o.f == "client-pause" and o.type == "ok"]
    assert pauses, [o for o in ops if o.process == "nemesis"]
    (pid, frozen), *_ = pauses[0].value["clients"].items()
    assert frozen["state"] == "T"
    resume = next(o for o in ops if o.f == "client-resume" and o.time > pauses[0].time)
    resumed = next(o for o in ops if o.index > resume.index and o.f == "client-resume")
    assert resumed.type == "ok" and resumed.value["resumed"][pid] != "T"
    start, end = pauses[0].time, resume.time
    txns = [o for o in ops if o.f == "txn"]
    done_in_pause = {o.process for o in txns if o.type != "invoke" and start < o.time < end}
    assert done_in_pause, "the client that was not frozen must go on"
    # The frozen client's op: open across the whole pause, completed after the resume.
    opened: dict[object, object] = {}
    spanning = []
    for o in txns:
        if o.type == "invoke":
            opened[o.process] = o
            continue
        inv = opened.pop(o.process, None)
        assert inv is not None, f"process {o.process} completed an op it never invoked"
        if inv.time < start and o.time > end:  # type: ignore[attr-defined]
            spanning.append((inv, o))
    assert spanning, "no op of the frozen client spans its pause"
    assert all(o.process not in done_in_pause for _, o in spanning)
    assert any(o.type == "ok" and o.time > end for o in txns), "no commit after the resume"
    assert res.valid is True, (_counts(res), res.forbidden_seen)
