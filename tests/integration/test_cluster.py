"""The cluster model and the link faults have the effect they claim, on real brokers."""

from __future__ import annotations

import time

import pytest
from kafka_trial.cluster.facade import Cluster
from kafka_trial.cluster.freezer import freeze_file, unpause
from kafka_trial.cluster.settings import BROKER_JVM_OPTS
from kafka_trial.contracts.history import read_history
from kafka_trial.harness.spec import RunSpec
from kafka_trial.nemesis.packages import PartitionFault, ProcessFault

from tests.integration.conftest import bind, log_since_start, probe, probe_client

SPEC = RunSpec()
TOPIC = SPEC.topic.name


def all_pairs(cluster: Cluster) -> list[tuple[int, int, str]]:
    ids = cluster.node_ids
    return [(a, b, k) for a in ids for b in ids if a != b for k in ("internal", "controller")]


def test_brokers_advertise_their_proxy_on_loopback(cluster: Cluster) -> None:
    md = cluster.admin().list_topics(timeout=10)
    advertised = {b.id: (b.host, b.port) for b in md.brokers.values()}
    assert advertised == {j: ("127.0.0.1", b.client_port) for j, b in cluster.brokers.items()}
    # The broker's own client listener is bound to its namespace's loopback only:
    # a host client can reach it only through the sidecar's proxy.
    for b in cluster.brokers.values():
        assert b.sidecar.attrs["HostConfig"]["PortBindings"]
        assert b.container.attrs["HostConfig"]["NetworkMode"].startswith("container:")


def test_brokers_run_with_the_configured_jvm_options(cluster: Cluster) -> None:
    assert cluster.spec.broker_jvm_opts == BROKER_JVM_OPTS
    for b in cluster.brokers.values():
        # The entrypoint execs the broker's JVM: it is the container's first process.
        got = b.container.exec_run(["cat", "/proc/1/cmdline"])
        assert got.exit_code == 0, got.output
        argv = got.output.decode().split("\0")
        assert "kafka.Kafka" in argv and BROKER_JVM_OPTS in argv, argv


def test_every_link_answers_when_healthy(cluster: Cluster) -> None:
    bad = [p for p in all_pairs(cluster) if not probe(cluster, *p)]
    assert bad == []
    assert all(probe_client(b.client_port) for b in cluster.brokers.values())


@pytest.mark.parametrize("mode", ["drop", "reject"])
def test_one_directed_link_is_cut_alone(cluster: Cluster, mode: str) -> None:
    link = cluster.link(1, 2, "internal")
    link.cut(mode)  # type: ignore[arg-type]
    try:
        assert not probe(cluster, 1, 2, "internal", attempts=1)
        assert probe(cluster, 1, 3, "internal"), "A->C must not be touched"
        assert probe(cluster, 2, 1, "internal"), "B->A must not be touched"
        assert probe(cluster, 1, 2, "controller"), "other listener must not be touched"
    finally:
        link.heal()
    assert probe(cluster, 1, 2, "internal")


def test_isolate_broker_cuts_it_off_and_heal_restores(cluster: Cluster, rec) -> None:
    pkg = bind(PartitionFault(TOPIC, 0, ("isolate-random",)), cluster, rec)
    pkg.fault(pick=0)
    try:
        (target,) = read_history(rec.history.path).ops[1].value["isolated"]
        others = [j for j in cluster.node_ids if j != target]
        for o in others:
            for kind in ("internal", "controller"):
                assert not probe(cluster, target, o, kind, attempts=1), f"{target}->{o} {kind}"
                assert not probe(cluster, o, target, kind, attempts=1), f"{o}->{target} {kind}"
        assert probe(cluster, others[0], others[1], "internal")
        assert probe(cluster, others[1], others[0], "controller")
    finally:
        pkg.heal()
    assert [p for p in all_pairs(cluster) if not probe(cluster, *p)] == []
    assert cluster.await_in_sync(TOPIC, 90)
    ops = read_history(rec.history.path).ops
    assert [(o.type, o.f) for o in ops] == [
        ("invoke", "partition"),
        ("ok", "partition"),
        ("invoke", "heal"),
        ("ok", "heal"),
    ]
    assert ops[1].value["isolated"] == [target]
    assert sorted(ops[1].value["brokers"]) == cluster.node_ids  # every node lost a peer


def test_client_link_cut_blocks_only_that_broker(cluster: Cluster) -> None:
    link = cluster.link(None, 1, "client")
    link.cut("reject")
    try:
        assert not probe_client(cluster.brokers[1].client_port, attempts=1)
        assert probe_client(cluster.brokers[2].client_port)
    finally:
        link.heal()
    assert probe_client(cluster.brokers[1].client_port)


def test_kill_leader_moves_leadership_and_start_rejoins(cluster: Cluster, rec) -> None:
    old = cluster.leader_of(TOPIC, 0)
    assert old is not None
    pkg = bind(ProcessFault("kill", TOPIC, 0, ("leader",)), cluster, rec)
    since = int(time.time()) - 1
    pkg.fault(pick=0)
    try:
        assert cluster.brokers[old].status() == "exited"
        deadline = time.monotonic() + 60
        new = old
        while time.monotonic() < deadline and new in (old, None):
            time.sleep(0.5)
            new = cluster.leader_of(TOPIC, 0)
        assert new not in (old, None), "no new leader within 60s"
    finally:
        pkg.heal()
    assert cluster.brokers[old].status() == "running"
    assert cluster.await_in_sync(TOPIC, 120), "killed broker did not rejoin the ISR"
    ops = read_history(rec.history.path).ops
    assert ops[1].f == "kill" and ops[1].value["brokers"] == [old]
    assert ops[3].f == "start" and ops[3].type == "ok"
    # Its storage was formatted: the restart did not run the storage tool again, whose
    # JVM would have said "All of the log directories are already formatted".
    restart_log = log_since_start(cluster.brokers[old].container, since)
    assert "Kafka Server started" in restart_log, restart_log[-2000:]
    assert "ormatt" not in restart_log, restart_log[-2000:]


def test_paused_broker_stops_answering(cluster: Cluster) -> None:
    b = cluster.brokers[3]
    b.pause()
    try:
        assert not probe(cluster, 1, 3, "internal", attempts=1)
        assert not probe_client(b.client_port, attempts=1)
    finally:
        b.resume()
    assert probe_client(b.client_port)


def test_a_pause_the_engine_is_slow_to_undo_is_thawed_through_the_freezer(
    cluster: Cluster,
) -> None:
    """`unpause` with no time for the engine: it thaws the cgroup itself, as it does
    when the engine hangs (cluster/freezer.py), and the broker answers again."""
    b = cluster.brokers[3]
    b.pause()
    path = freeze_file(b.container.id)
    assert path is not None, "this engine's cgroup layout is not one freezer.py knows"
    try:
        assert path.read_text().strip() in ("FROZEN", "1")
        assert not probe_client(b.client_port, attempts=1)
        assert unpause(b.container, wait_s=0) == str(path)
        assert path.read_text().strip() in ("THAWED", "0")
        # The engine agrees: it would refuse every later unpause if it held the
        # container as paused after the thaw.
        assert b.status() == "running"
    finally:
        b.resume()
    assert probe_client(b.client_port)
    assert b.status() == "running"
