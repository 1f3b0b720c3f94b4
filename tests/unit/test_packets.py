"""`packet` on the in-memory cluster: what it asks of which broker, what its fault and
heal record, and the rules it builds (the real namespaces: tests/integration)."""

from __future__ import annotations

from kafka_trial.cluster.netns_faults import rules_for
from kafka_trial.contracts.history import HistoryWriter, read_history
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
