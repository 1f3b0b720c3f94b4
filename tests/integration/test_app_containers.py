"""The application's containers in a real engine (cluster/app_containers.py).

The first test needs no brokers: a stand-in names a network of its own and a lane
route that leads to the instance's sidecar's own API, so the path the app's
connections take (its sidecar's forwarding proxy, by name on the network) is proven
end to end, with the engine's pause, kill and stop read back, the logs kept, and
everything removed by the run label. A Kafka client in an app container against a
real cluster, through the lane proxies, is tests/integration/test_apps.py's Kafka
Streams run."""

from __future__ import annotations

import io
import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka_trial.cluster.app_containers import (
    app_sidecar,
    sidecar_name,
    start_app_container,
)
from kafka_trial.cluster.images import Images
from kafka_trial.cluster.leftovers import remove_leftovers
from kafka_trial.cluster.naming import API_PORT, LABEL_RUN, labels
from kafka_trial.contracts.app_contract import APPS
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.recorder import NemesisRecorder

import docker

# Reaches the route's listen address (the sidecar forwards it to its own API), then
# says what it was given, and waits to be paused, killed or stopped.
_APP = (
    "exec 3<>/dev/tcp/127.0.0.1/{port} && "
    "printf 'GET /version HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3; echo; "
    'echo "bootstrap=$KAFKA_BOOTSTRAP_SERVERS group=$GROUP_ID"; echo to-stderr >&2; '
    "exec sleep 600"
)


def _image(engine: docker.DockerClient, base: str, script: str, tag: str) -> str:
    """A local image of `base` whose command is a bash script: built from a Dockerfile
    alone, so no registry is asked."""
    dockerfile = f"FROM {base}\nENTRYPOINT {json.dumps(['bash', '-c', script])}\n"
    engine.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, pull=False)
    return tag


@dataclass
class _Stand:
    """What start_app_container needs of a cluster, with one lane route."""

    run_id: str
    network_name: str
    images: Images
    routes: list[tuple[str, str]]
    calls: list[str] = field(default_factory=list)

    def lane_routes(self, lane: int) -> list[tuple[str, str]]:
        return self.routes

    def bootstrap_in_network(self, lane: int) -> str:
        return ",".join(listen for listen, _ in self.routes)

    def cut_lane(self, lane: int, mode: str = "reject") -> dict[str, Any]:
        self.calls.append(f"cut {lane}")
        return {"lane": lane}

    def restore_lane(self, lane: int) -> dict[str, Any]:
        self.calls.append(f"restore {lane}")
        return {"lane": lane}


@pytest.fixture
def stand(engine: docker.DockerClient, images: Images) -> Iterator[Any]:
    run_id = f"t{secrets.token_hex(3)}"
    net = engine.networks.create(f"kt-{run_id}", labels=labels(run_id, "network"))
    routes = [("127.0.0.1:40001", f"{sidecar_name(run_id, 0)}:{API_PORT}")]
    try:
        yield _Stand(run_id, net.name, images, routes)
    finally:
        remove_leftovers(engine, run=run_id)
        assert engine.containers.list(all=True, filters={"label": [f"{LABEL_RUN}={run_id}"]}) == []


def _wait_for(cond, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.2)
    return False


def test_an_instance_reaches_its_lane_and_is_paused_killed_and_stopped(
    engine: docker.DockerClient, images: Images, stand: Any, tmp_path: Path
) -> None:
    tag = _image(engine, images.kafka, _APP.format(port=40001), f"kt-test-app:{stand.run_id}")
    out, err = tmp_path / "app" / "instance-0.out", tmp_path / "app" / "instance-0.err"
    try:
        with pytest.raises(TrialError, match="is not in the local Docker engine"):
            start_app_container(engine, stand, "kt-no-such-app:1", "app", {}, 0, out, err, 0)
        env = {"GROUP_ID": "g1"}
        app = start_app_container(engine, stand, tag, "app", env, 0, out, err, 0, 1.0)
        assert app.running() and set(app.describe()) == {"instance", "container"}
        assert _wait_for(lambda: b"group=g1" in app.container.logs(stderr=False))

        assert app.pause() == {"was": "running", "state": "paused"}
        assert app.resume() == {"state": "running"}
        # Paused, then killed: the engine's kill must still end it.
        assert app.pause() == {"was": "running", "state": "paused"}
        seen = app.kill("app-kill")
        assert (seen["state"], seen["after"], seen["exit_code"]) == ("paused", "exited", 137)
        assert not app.running() and app.ended_by == "app-kill"
        text = out.read_text()
        assert "bootstrap=127.0.0.1:40001 group=g1" in text
        assert '"version"' in text or "2." in text, text  # the sidecar's API, forwarded
        assert app.stderr_tail() == "to-stderr\n"
        assert app.cut() == {"lane": 0} and stand.calls == ["cut 0"]

        # A restart: a new container in the same sidecar's namespace; output appended.
        sidecar = app_sidecar(engine, stand, 0, 0)
        again = start_app_container(engine, stand, tag, "app", {}, 0, out, err, 0, 1.0)
        assert again.container.id != app.container.id
        assert engine.containers.get(sidecar_name(stand.run_id, 0)).id == sidecar.id
        assert _wait_for(lambda: b"bootstrap=" in again.container.logs(stderr=False))
        # The nemesis's faults on it, through the registry, as a run applies them.
        APPS.register(again)
        try:
            nem = Nemesis(stand, NemesisRecorder(HistoryWriter(tmp_path / "h.jsonl", flush_s=0)))
            paused = nem.apply("app-pause", 1)
            assert paused.ok and paused.results[0]["state"] == "paused"
            assert paused.results[0]["container"] == again.container.short_id
            assert nem.heal() == 1 and again.status() == "running"
        finally:
            APPS.unregister(0)
        # Stopped while paused; sleep as PID 1 ignores SIGTERM: docker stop ends it
        # with SIGKILL after the grace.
        again.pause()
        seen = again.terminate("app-restart")
        assert (seen["state"], seen["after"], seen["exit_code"]) == ("paused", "exited", 137)
        assert out.read_text().count("bootstrap=127.0.0.1:40001") == 2
    finally:
        engine.images.remove(tag, force=True)
