"""`packet` on the in-memory cluster: what it asks of which broker, what its fault and
heal record, and the rules it builds (the real namespaces: tests/integration)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kafka_trial.cluster.netns_faults import _COUNTS, Helper, rules_for, stop_helper
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.contracts.spec.nemesis import PacketSpec
from kafka_trial.harness.spec import build_spec
from kafka_trial.nemesis import Nemesis
from kafka_trial.nemesis.effects import effect
from kafka_trial.nemesis.settings import NemesisSpec

from tests.fakes import FakeCluster


def test_a_packet_fault_is_made_on_its_targets_and_its_heal_says_what_it_matched(
    tmp_path,
) -> None:
    cluster = FakeCluster()
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    spec = NemesisSpec(faults=("packet",), targets=("leader",), packet={"kind": "duplicate"})
    nem = Nemesis(cluster, history, spec, "trial")
    applied = nem.apply("packet", pick=0)
    leader = cluster.leaders[0]
    assert applied.ok and cluster.packet_faults == {leader: "duplicate"}
    nem.heal()
    assert cluster.packet_faults == {} and cluster.whole
    ops = {(o.f, o.type): o for o in read_history(history.path).ops}
    fault = ops[("packet", "ok")]
    assert fault.value["kind"] == "duplicate" and fault.value["brokers"] == [leader]
    healed = ops[("packet-heal", "ok")]
    assert healed.value["packets"] == {str(leader): {"matched_packets": 7}}
    assert effect("packet-heal", "ok", healed.value) == (
        f"broker {leader}'s rules matched 7 packets"
    )


def test_the_rules_lose_everything_sent_out_and_duplicate_to_each_peer() -> None:
    (loss,) = rules_for("loss", 0.25, ["10.0.0.2", "10.0.0.3"], 1)
    assert loss.table == "filter"
    assert "-o eth0" in loss.spec and "--probability 0.2500" in loss.spec
    assert loss.spec.endswith("-j DROP")
    dup = rules_for("duplicate", 0.1, ["10.0.0.2", "10.0.0.3"], 1)
    assert [r.table for r in dup] == ["mangle", "mangle"]
    assert [r.spec.split("--gateway ")[1] for r in dup] == ["10.0.0.2", "10.0.0.3"]
    assert rules_for("rate", 1, ["10.0.0.2"], 1) == []  # a qdisc, not a rule


def test_reorder_and_corrupt_queue_a_share_of_what_the_node_sends_to_its_helper() -> None:
    for kind in ("reorder", "corrupt"):
        (rule,) = rules_for(kind, 0.3, ["10.0.0.2"], 2)
        assert rule.table == "filter"
        assert rule.spec == (
            "-o eth0 -p tcp -m statistic --mode random --probability 0.3000 "
            "-m comment --comment kt:packet-2 -j NFQUEUE --queue-num 102 --queue-bypass"
        )
        assert rule.present() == f"iptables -w -C KT-TRIAL {rule.spec}"
    # The heal's count of matched packets reads the NFQUEUE rule's counter too.
    listing = (
        "Chain KT-TRIAL (2 references)\n"
        "    pkts      bytes target     prot opt in     out     source               destination\n"
        "      42     6000 NFQUEUE    6    --  *      eth0    0.0.0.0/0            0.0.0.0/0\n"
    )
    assert [int(n) for n, _ in _COUNTS.findall(listing)] == [42]


def test_the_spec_takes_reorder_and_corrupt_and_bounds_the_hold_in_one_line() -> None:
    assert PacketSpec(kind="reorder").delay_ms == 20
    assert PacketSpec(kind="corrupt", probability=0.05).kind == "corrupt"
    for bad in (0, 1001):
        with pytest.raises(TrialError) as e:
            build_spec({"nemesis": {"packet": {"kind": "reorder", "delay_ms": bad}}})
        problem = e.value.problem
        assert "\n" not in problem and f"delay_ms={bad} is outside 1..1000" in problem
        assert "use 1 to 1000" in problem and "nemesis.packet.delay_ms" in e.value.fix
    with pytest.raises(TrialError, match="'reorder' or 'corrupt'"):
        build_spec({"nemesis": {"packet": {"kind": "jitter"}}})


def test_a_reorder_fault_records_its_hold_and_its_heal_what_the_helper_did(tmp_path) -> None:
    cluster = FakeCluster()
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    spec = NemesisSpec(
        faults=("packet",), targets=("leader",), packet={"kind": "reorder", "delay_ms": 35}
    )
    nem = Nemesis(cluster, history, spec, "trial")
    assert nem.apply("packet", pick=0).ok
    nem.heal()
    fault = next(o for o in read_history(history.path).ops if o.f == "packet" and o.type == "ok")
    assert fault.value["kind"] == "reorder" and fault.value["delay_ms"] == 35
    healed = {
        "packets": {"2": {"matched_packets": 9, "helper": {"queued": 9, "held": 9, "corrupted": 0}}}
    }
    assert effect("packet-heal", "ok", healed) == (
        "broker 2's rules matched 9 packets; its helper queued 9, held 9"
    )


def test_kinds_mixes_the_kinds_of_one_run_by_each_faults_pick(tmp_path) -> None:
    cluster = FakeCluster()
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    kinds = ("loss", "duplicate", "reorder")
    spec = NemesisSpec(faults=("packet",), targets=("leader",), packet={"kinds": kinds})
    nem = Nemesis(cluster, history, spec, "trial")
    for pick in (0, 1, 2, 4):
        assert nem.apply("packet", pick=pick).ok
        assert set(cluster.packet_faults.values()) == {kinds[pick % 3]}
        nem.heal()
    made = [o.value["kind"] for o in read_history(history.path).ops if o.f == "packet"]
    assert (
        made == ["loss", "loss", "duplicate", "duplicate", "reorder", "reorder"] + ["duplicate"] * 2
    )  # invoke and completion of each; pick 4 is kinds[1]
    # Without kinds, every fault is `kind`, whatever its pick.
    assert PacketSpec(kind="rate").kind_for(7) == "rate"
    with pytest.raises(ValueError, match="kinds"):
        PacketSpec(kinds=("loss", "jitter"))


_FAKE_HELPER = """
import json, signal, sys, time
if sys.argv[1] == "obeys":
    signal.signal(signal.SIGTERM, lambda *_: (print(json.dumps({"counts": {"queued": 3}})),
        sys.exit(0)))
else:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(json.dumps({"ready": True}), flush=True)
while True:
    time.sleep(0.05)
"""


def test_stopping_a_helper_reads_its_counts_or_kills_one_that_will_not_go() -> None:
    for how, said in (("obeys", {"queued": 3}), ("ignores", "killed after 1 s")):
        proc = subprocess.Popen(
            [sys.executable, "-c", _FAKE_HELPER, how], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and "ready" in proc.stdout.readline()
        helper = Helper(1, 101, proc)
        assert helper.alive()
        assert stop_helper(helper, timeout_s=1) == {"helper": said}
        assert not helper.alive()
