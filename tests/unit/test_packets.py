"""`packet` on the in-memory cluster: what it asks of which broker, what its fault and
heal record, and the rules it builds (the real namespaces: tests/integration)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kafka_trial.cluster.netfaults import rate_to
from kafka_trial.cluster.netns_faults import (
    _COUNTS,
    _SHAPED_LINK,
    _U32_DST,
    Helper,
    rules_for,
    stop_helper,
)
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.contracts.spec.nemesis import PacketSpec
from kafka_trial.harness.spec import build_spec
from kafka_trial.nemesis import Nemesis
from kafka_trial.nemesis.effects import effect
from kafka_trial.nemesis.packets import draw_links
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


def _link_run(tmp_path, pick: int, **packet: object) -> tuple[FakeCluster, list]:
    cluster = FakeCluster()
    history = HistoryWriter(tmp_path / f"history-{pick}.jsonl", flush_s=0)
    spec = NemesisSpec(faults=("packet",), targets=("leader",), packet={"scope": "link", **packet})
    nem = Nemesis(cluster, history, spec, "trial")
    assert nem.apply("packet", pick=pick).ok
    return cluster, read_history(history.path).ops


def test_a_link_fault_is_on_one_peer_the_pick_draws_and_records_it(tmp_path) -> None:
    cluster, ops = _link_run(tmp_path, 3, kind="loss")
    leader = cluster.leaders[0]
    (peer,) = cluster.packet_links.values()
    assert cluster.packet_links == {leader: peer} and peer != leader
    assert peer in cluster.node_ids
    assert ("add_packet_fault", (leader, "loss", peer)) in cluster.calls
    invoke, done = (o for o in ops if o.f == "packet")
    assert invoke.value["scope"] == "link" and "links" not in invoke.value
    assert done.value["links"] == [{"from": leader, "to": peer}]
    made = done.value["made"][str(leader)]
    assert made["dst"] == f"10.0.0.{peer}"
    assert all(f"-d {made['dst']}/32" in r for r in made["read_back"])
    assert effect("packet", "ok", done.value).endswith(f"p=0.2, to 10.0.0.{peer}")


def test_the_link_follows_the_pick_so_a_replay_draws_the_same_one(tmp_path) -> None:
    (tmp_path / "replay").mkdir()
    drawn = {pick: _link_run(tmp_path, pick)[0].packet_links for pick in range(8)}
    again = {pick: _link_run(tmp_path / "replay", pick)[0].packet_links for pick in range(8)}
    assert drawn == again
    assert len({tuple(links.values()) for links in drawn.values()}) == 2  # both peers drawn
    # Several targets: each gets a peer of its own, never itself, the same every time.
    links = draw_links([1, 2, 3], [3, 1, 2], 5)
    assert links == draw_links([1, 2, 3], [1, 2, 3], 5)
    assert all(peer != b and peer in (1, 2, 3) for b, peer in links.items())
    with pytest.raises(RuntimeError, match="no peer broker"):
        draw_links([1], [1], 0)


def test_the_default_scope_is_the_node_as_before(tmp_path) -> None:
    assert PacketSpec().scope == "node"
    cluster = FakeCluster()
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    spec = NemesisSpec(faults=("packet",), targets=("leader",), packet={"kind": "rate"})
    nem = Nemesis(cluster, history, spec, "trial")
    assert nem.apply("packet", pick=3).ok
    leader = cluster.leaders[0]
    assert ("add_packet_fault", (leader, "rate")) in cluster.calls
    assert cluster.packet_links == {}
    for op in (o for o in read_history(history.path).ops if o.f == "packet"):
        assert "scope" not in op.value and "links" not in op.value
    with pytest.raises(TrialError) as e:
        build_spec({"nemesis": {"packet": {"scope": "links"}}})
    assert "\n" not in e.value.problem and "must be 'node' or 'link'" in e.value.problem
    assert "nemesis.packet.scope" in e.value.fix


def test_on_one_link_the_rules_match_the_peer_and_the_rate_is_an_htb_class() -> None:
    (loss,) = rules_for("loss", 0.25, ["10.0.0.3"], 1, to="10.0.0.3")
    assert loss.spec.startswith("-o eth0 -p tcp -d 10.0.0.3 -m statistic")
    (queued,) = rules_for("reorder", 0.25, ["10.0.0.3"], 1, to="10.0.0.3")
    assert "-d 10.0.0.3 " in queued.spec and "NFQUEUE" in queued.spec
    (dup,) = rules_for("duplicate", 0.1, ["10.0.0.2", "10.0.0.3"], 1, to="10.0.0.3")
    assert "-d 10.0.0.3 " in dup.spec and dup.spec.endswith("--gateway 10.0.0.3")
    # No prio qdisc in this kernel and tbf sees no destinations: an htb root sends what
    # no filter classifies unshaped, and a u32 filter puts the peer's into the rate.
    cmd = rate_to("eth0", 256, "10.0.0.3")
    assert "root handle 7a71: htb &&" in cmd and "rate 256kbit ceil 256kbit" in cmd
    assert cmd.endswith("u32 match ip dst 10.0.0.3/32 flowid 7a71:1")
    shown = (
        "filter parent 7a71: protocol ip pref 1 u32 chain 0 fh 800::800 order 2048 key ht "
        "800 bkt 0 *flowid 7a71:1 not_in_hw \n  match 0a000003/ffffffff at 16\n"
    )
    assert [bytes.fromhex(h) for h in _U32_DST.findall(shown)] == [bytes([10, 0, 0, 3])]
    classes = (
        "class htb 7a71:1 root prio 0 rate 256Kbit ceil 256Kbit burst 3200b cburst 3200b \n"
        " Sent 280298 bytes 269 pkt (dropped 0, overlimits 268 requeues 0) \n"
    )
    m = _SHAPED_LINK.search(classes)
    assert m is not None and m.groups() == ("269", "0", "268")


def test_a_rate_fault_on_one_link_is_made_and_healed_like_any_other(tmp_path) -> None:
    cluster = FakeCluster()
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    packet = {"scope": "link", "kind": "rate", "kbit": 512}
    spec = NemesisSpec(faults=("packet",), targets=("leader",), packet=packet)
    nem = Nemesis(cluster, history, spec, "trial")
    assert nem.apply("packet", pick=1).ok
    ((node, peer),) = cluster.packet_links.items()
    nem.heal()
    assert cluster.packet_faults == {} and cluster.packet_links == {} and cluster.whole
    ops = {(o.f, o.type): o for o in read_history(history.path).ops}
    done = ops[("packet", "ok")]
    assert done.value["kind"] == "rate" and done.value["links"] == [{"from": node, "to": peer}]
    assert ops[("packet-heal", "ok")].value["packets"] == {str(node): {"matched_packets": 7}}
