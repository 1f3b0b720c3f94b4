"""voter-change and remove-broker against real brokers on a dynamic quorum (KIP-853):
the voter set changed and restored, and a broker unregistered and back, as Kafka itself
reads them back. Only what must hold in every run is asserted; which voter or broker a
pick hits is read from the op, not assumed."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from kafka_trial.cluster.control import LinkId
from kafka_trial.cluster.facade import Cluster
from kafka_trial.cluster.images import Images
from kafka_trial.cluster.settings import ClusterSpec, TopicSpec
from kafka_trial.contracts.history import read_history
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.membership import RemoveBroker, VoterChange
from kafka_trial.nemesis.recorder import NemesisRecorder

import docker
from tests.integration.conftest import containers_of

TOPIC = TopicSpec()
MARKER = "/var/lib/kafka/data/kt-marker"


@pytest.fixture(scope="module")
def cluster(engine: docker.DockerClient, images: Images, tmp_path_factory) -> Iterator[Cluster]:
    """A 3-node cluster whose controllers form a dynamic quorum, with the default topic."""
    spec = ClusterSpec(quorum="dynamic")
    c = Cluster(engine, spec, images)
    try:
        c.start()
        c.await_registered(spec.startup_timeout_s)
        c.create_topic(TOPIC)
        assert c.await_in_sync(TOPIC.name, 120)
        yield c
    finally:
        c.collect_logs(tmp_path_factory.mktemp("logs"))
        c.teardown()
        assert containers_of(c.run_id) == []


def _completions(rec: NemesisRecorder, f: str) -> list:
    return [o for o in read_history(rec.history.path).ops if o.f == f and o.type != "invoke"]


def _voters_gone(cluster: Cluster, node: int, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if node not in cluster.quorum().voters:
                return True
        except RuntimeError:  # a removed leader resigns: asked again
            pass
        time.sleep(1)
    return False


def test_the_storage_was_formatted_for_a_dynamic_quorum(cluster: Cluster) -> None:
    q = cluster.quorum()
    # Every node a voter, each by the directory id its storage was formatted with.
    assert q.voters == cluster._provision.directory_ids
    assert q.leader in q.voters and q.observers == {}


def test_a_voter_is_removed_and_added_back(cluster: Cluster, rec: NemesisRecorder) -> None:
    before = cluster.quorum()
    nem = Nemesis(cluster, rec)
    applied = nem.apply(VoterChange(), pick=0)  # even: the quorum leader
    (done,) = _completions(rec, "voter-remove")
    assert done.type == "ok", done
    node = done.value["voter"]
    assert node == done.value["leader_before"] and done.value["was_leader"] is True
    assert done.value["before"] == [1, 2, 3] and node not in done.value["after"]
    # Kafka's own account: no longer a voter. (Who leads is not asserted: a leader that
    # removed itself leads on until the change commits, then resigns.)
    now = cluster.quorum()
    assert node not in now.voters and sorted(now.voters) == done.value["after"]
    assert applied.heal is not None
    nem.heal()
    (healed,) = _completions(rec, "voter-add")
    assert healed.type == "ok", healed
    assert cluster.quorum().voters == before.voters  # the same voters, the same directories
    # The metadata log whole: the heal waited until every voter, the returned one too,
    # held it to the high watermark, and recorded what the leader reported.
    added = json.dumps(healed.value)
    assert '"high_watermark"' in added and '"log_ends"' in added, added
    q = cluster.quorum()
    assert q.high_watermark is not None and set(q.log_ends) == set(q.voters)
    assert cluster.await_in_sync(TOPIC.name, 60)


def test_heal_all_adds_back_a_voter_no_heal_added(cluster: Cluster) -> None:
    before = cluster.quorum()
    node = next(v for v in sorted(before.voters) if v != before.leader)
    cluster.remove_voter(node, before.voters[node])
    assert _voters_gone(cluster, node)
    cluster.heal_all()
    assert cluster.quorum().voters == before.voters


def test_a_broker_is_decommissioned_and_a_fresh_one_takes_its_place(
    cluster: Cluster, rec: NemesisRecorder
) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(300):
        producer.produce(TOPIC.name, str(i).encode(), partition=i % TOPIC.partitions)
    assert producer.flush(30) == 0
    for b in cluster.brokers.values():
        assert b.container.exec_run(["touch", MARKER]).exit_code == 0
    placed = {p: s.replicas for p, s in cluster.partitions(TOPIC.name).items()}
    voters = cluster.quorum().voters
    nem = Nemesis(cluster, rec)
    nem.apply(RemoveBroker(), pick=1)
    (done,) = _completions(rec, "remove-broker")
    assert done.type == "ok", done
    gone = done.value["broker"]
    # Kafka's own account: not registered (fenced brokers listed too) and holding nothing.
    assert gone not in cluster.registered_brokers()
    placement = cluster.placement()
    assert TOPIC.name in placement
    holding = [
        f"{t}/{p}" for t, ps in placement.items() for p, s in ps.items() if gone in s.replicas
    ]
    assert holding == []
    assert cluster.brokers[gone].status() == "exited"
    assert f"{TOPIC.name}/0" in done.value["moved"]
    nem.heal()
    (healed,) = _completions(rec, "add-broker")
    assert healed.type == "ok", healed
    assert healed.value["added"][str(gone)]["restored"] == len(done.value["moved"])
    assert cluster.registered_brokers().get(gone) is False  # registered, unfenced
    marker = cluster.brokers[gone].container.exec_run(["test", "-e", MARKER])
    assert marker.exit_code == 1, "the fresh broker's storage was not empty"
    assert cluster.await_in_sync(TOPIC.name, 120)
    assert {p: s.replicas for p, s in cluster.partitions(TOPIC.name).items()} == placed
    # Its controller is a new replica of the quorum (KIP-853: a replaced disk gets a new
    # directory id), voting in the old one's place; the other voters are as they were.
    now = cluster.quorum().voters
    assert sorted(now) == sorted(voters) and now[gone] != voters[gone]
    assert {v: d for v, d in now.items() if v != gone} == {
        v: d for v, d in voters.items() if v != gone
    }
    assert healed.value["added"][str(gone)]["voter"] == {
        "from": voters[gone],
        "to": now[gone],
        "voters": sorted(voters),
    }


def test_the_quorum_answers_while_one_broker_is_cut_off(cluster: Cluster) -> None:
    """A voter cut off from the other two (its links to them dropped, both ways) leaves
    a majority with the leader: the quorum can answer, and the membership verbs must
    reach it whichever broker the admin client would have picked."""
    q = cluster.quorum()
    lone = next(v for v in sorted(q.voters) if v != q.leader)
    others = [n for n in sorted(q.voters) if n != lone]
    links = [
        LinkId(a, b, kind)
        for o in others
        for a, b in ((lone, o), (o, lone))
        for kind in ("internal", "controller")
    ]
    lone_server = f"127.0.0.1:{cluster.brokers[lone].client_ports[0]}"
    for link in links:
        cluster.cut(link)
    try:
        for _ in range(2):
            # The cut-off broker asked first each time (as if it had answered last):
            # before the membership verbs went through one broker at a time, an admin
            # client given all three timed out whenever its own pick was that one.
            cluster.members._answered = lone_server
            t0 = time.monotonic()
            got = cluster.quorum()
            assert got.leader in others and set(got.voters) == set(q.voters)
            print(f"quorum answered in {time.monotonic() - t0:.1f} s")
    finally:
        for link in links:
            cluster.uncut(link)
