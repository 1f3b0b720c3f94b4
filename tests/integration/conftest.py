"""Real brokers in real containers behind real Toxiproxy: no mocks here."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kafka_trial.cluster.engine import ensure_engine
from kafka_trial.cluster.facade import Cluster
from kafka_trial.cluster.images import Images, ensure_images
from kafka_trial.cluster.leftovers import owner_alive
from kafka_trial.cluster.naming import CONTROLLER_PROXY_BASE, INTERNAL_PROXY_BASE, LABEL, LABEL_PID
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.harness.spec import RunSpec
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.recorder import NemesisRecorder
from kafka_trial.nemesis.steps import Package

import docker

# ApiVersions v0, correlation id 1, client id "kt": any Kafka listener answers it.
API_VERSIONS = b"\x00\x00\x00\x0c\x00\x12\x00\x00\x00\x00\x00\x01\x00\x02kt"
_PROBE = (
    "exec 3<>/dev/tcp/127.0.0.1/{port} || exit 2; "
    "printf '\\x00\\x00\\x00\\x0c\\x00\\x12\\x00\\x00\\x00\\x00\\x00\\x01\\x00\\x02kt' >&3; "
    'test "$(head -c 4 <&3 | wc -c)" = 4'
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def engine() -> docker.DockerClient:
    return ensure_engine()


@pytest.fixture(scope="session")
def images(engine: docker.DockerClient) -> Images:
    return ensure_images(engine, RunSpec().cluster)


@pytest.fixture(scope="module")
def cluster(engine: docker.DockerClient, images: Images, tmp_path_factory) -> Iterator[Cluster]:
    """One default 3-node cluster with the default topic, shared by a test module."""
    spec = RunSpec()
    c = Cluster(engine, spec.cluster, images)
    try:
        c.start()
        c.await_registered(spec.cluster.startup_timeout_s)
        c.create_topic(spec.topic)
        assert c.await_in_sync(spec.topic.name, 120)
        yield c
    finally:
        c.collect_logs(tmp_path_factory.mktemp("logs"))
        c.teardown()
        assert containers_of(c.run_id) == []


@pytest.fixture
def rec(tmp_path) -> Iterator[NemesisRecorder]:
    # Written through: the tests read each fault's op back while the history is open.
    h = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    yield NemesisRecorder(h)
    h.close()


@dataclass
class Bound:
    """One package applied through a Nemesis: `fault(pick)` and `heal()` as a test
    reads them; the nemesis records both in the fixture's history."""

    package: Package
    nemesis: Nemesis

    def fault(self, pick: int) -> None:
        self.nemesis.apply(self.package, pick)

    def heal(self) -> None:
        self.nemesis.heal()


def bind(package: Package, cluster: Cluster, rec: NemesisRecorder) -> Bound:
    return Bound(package, Nemesis(cluster, rec))


@pytest.fixture(scope="session", autouse=True)
def no_leftovers_after_session(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if any("/integration/" in str(i.fspath) for i in request.session.items):
        client = ensure_engine()
        # Ours, or orphans; a concurrent run's live containers are not ours to judge.
        left = [
            c
            for c in client.containers.list(all=True, filters={"label": [LABEL]})
            if c.labels.get(LABEL_PID) == str(os.getpid()) or not owner_alive(c.labels)
        ]
        assert not left, f"containers left behind: {[c.name for c in left]}"


def _retry(once, attempts: int) -> bool:
    """A loaded 2-core machine can starve one probe: a positive check gets a few
    tries; a check that expects silence passes attempts=1."""
    for i in range(attempts):
        if once():
            return True
        if i + 1 < attempts:
            time.sleep(1)
    return False


def probe(
    cluster: Cluster, src: int, dst: int, kind: str, timeout_s: int = 3, attempts: int = 3
) -> bool:
    """Does a Kafka request from node src's namespace to dst's listener get an answer?"""
    base = INTERNAL_PROXY_BASE if kind == "internal" else CONTROLLER_PROXY_BASE
    cmd = ["timeout", str(timeout_s), "bash", "-c", _PROBE.format(port=base + dst)]
    return _retry(lambda: cluster.brokers[src].container.exec_run(cmd).exit_code == 0, attempts)


def probe_client(port: int, timeout_s: float = 3, attempts: int = 3) -> bool:
    def once() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
                s.sendall(API_VERSIONS)
                # The whole answer: a 4-byte length, then that many bytes.
                want, got = 4, b""
                while len(got) < want:
                    chunk = s.recv(want - len(got))
                    if not chunk:
                        return False
                    got += chunk
                    if want == 4 and len(got) == 4:
                        want += int.from_bytes(got, "big")
                return True
        except OSError:
            return False

    return _retry(once, attempts)


def containers_of(run_id: str) -> list[str]:
    return containers_with_label(f"kafka-trial.run={run_id}")


def containers_with_label(label: str = "kafka-trial") -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={label}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def log_since_start(container: Any, since: int, timeout_s: float = 60) -> str:
    """A broker container's log since `since` (epoch seconds), once its broker has
    said it started (or the timeout passed): a start returns before the JVM logs."""
    deadline, text = time.monotonic() + timeout_s, ""
    while "Kafka Server started" not in text and time.monotonic() < deadline:
        time.sleep(0.5)
        text = container.logs(since=since).decode(errors="replace")
    return text
