"""One client can be cut off one broker while every other client still reaches it."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka.admin import AdminClient
from kafka_trial.cluster.facade import Cluster
from kafka_trial.cluster.images import Images
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.harness.spec import build_spec
from kafka_trial.nemesis.packages import ClientPartition
from kafka_trial.nemesis.recorder import NemesisRecorder

import docker
from tests.integration.conftest import bind, probe_client


def test_client_lanes(engine: docker.DockerClient, images: Images, tmp_path: Path) -> None:
    spec = build_spec({"cluster": {"client_lanes": 2}})
    c = Cluster(engine, spec.cluster, images)
    rec = NemesisRecorder(HistoryWriter(tmp_path / "history.jsonl", flush_s=0))  # read open
    try:
        c.start()
        c.await_registered(spec.cluster.startup_timeout_s)
        # Each lane's metadata advertises that lane's own ports, so a client stays in it.
        for lane in (0, 1):
            md = AdminClient({"bootstrap.servers": c.bootstrap_for(lane)}).list_topics(timeout=10)
            assert {b.id: b.port for b in md.brokers.values()} == {
                j: b.client_ports[lane] for j, b in c.brokers.items()
            }
        pkg = bind(ClientPartition(spec.topic.name, 0, ("random",), "reject", scope="one"), c, rec)
        pkg.fault(pick=1)  # lane 1
        done = read_history(rec.history.path).ops[-1].value
        (hit,) = done["brokers"]
        assert done["lanes"] == [1]
        for j, b in c.brokers.items():
            assert probe_client(b.client_ports[0]), "the other client must be untouched"
            assert probe_client(b.client_ports[1], attempts=3 if j != hit else 1) == (j != hit), j
        pkg.heal()
        assert all(probe_client(p) for b in c.brokers.values() for p in b.client_ports)
    finally:
        rec.history.close()
        c.teardown()
