"""The SSH kind's test double as a session fixture: tests of `cluster.kind: ssh`
import it (`from tests.integration.ssh_fixtures import ssh_double_cluster`). One per
module: it costs three JVMs, which must not idle on through the later cluster tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka_trial.cluster.images import Images
from kafka_trial.cluster.ssh_double import LABEL, SshDouble, ssh_double

import docker

READY_TIMEOUT_S = 180.0


@pytest.fixture(scope="module")
def ssh_double_cluster(
    engine: docker.DockerClient, images: Images, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SshDouble]:
    """Three KRaft nodes reached over SSH and published client ports, all registered."""
    with ssh_double(engine, images, tmp_path_factory.mktemp("ssh-double")) as d:
        d.await_ready(READY_TIMEOUT_S)
        yield d
    left = engine.containers.list(all=True, filters={"label": [f"{LABEL}={d.id}"]})
    assert left == [], f"SSH double containers left behind: {[c.name for c in left]}"
