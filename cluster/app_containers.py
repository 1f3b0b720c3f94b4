"""The application on trial as containers (`app.image`): each instance a container of
a local image, started with testcontainers-python, that reaches the brokers through
their Toxiproxy proxies, so link faults apply to it as to any client.

Why each instance has a sidecar: the brokers advertise a client lane at the host's
loopback (127.0.0.1:<published port>), the addresses host clients follow after their
bootstrap. A container on the cluster's network reaches each broker's lane proxy by
name (`Cluster.bootstrap_in_network`), but the metadata would then send it to its own
loopback, where nothing listens. So the instance joins the network namespace of a
sidecar of its own (as each broker joins its proxy's): a Toxiproxy on the cluster's
network whose proxies listen on those loopback addresses and forward to the lane
proxies (`Cluster.lane_routes`). Every byte goes app -> sidecar -> the broker's lane
proxy -> broker, so cutting the lane (`Cluster.cut_lane`) cuts the instance off.

A restart is a new container in the same sidecar's namespace. Instances and sidecars
carry the cluster's run label: teardown, `kafka-trial cleanup` and the removal of a
dead owner's leftovers remove them with the brokers (leftovers.py).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docker.errors import APIError, ImageNotFound, NotFound
from docker.models.containers import Container
from kafka_trial.cluster.control import LaneControl
from kafka_trial.cluster.freezer import unpause
from kafka_trial.cluster.naming import API_PORT, LABEL_APP, LABEL_ROLE, LABEL_RUN, labels
from kafka_trial.cluster.toxiproxy import ToxiproxyClient, ToxiproxyError
from kafka_trial.contracts.errors import TrialError

import docker

if TYPE_CHECKING:
    from kafka_trial.cluster.facade import Cluster

APP_ROLE = "app"
APP_NET_ROLE = "app-net"
# How long a sidecar's Toxiproxy may take to answer its API once started.
SIDECAR_WAIT_S = 30.0
# How long a killed container may take to show it exited: the engine reports a
# SIGKILLed container gone well within a second.
KILL_WAIT_S = 5.0
# How long a paused container may take to show it paused.
PAUSE_SEEN_S = 5.0
# How much of an instance's stderr an exit record quotes (its end: the last words).
STDERR_TAIL = 2000


def require_local_image(client: docker.DockerClient, name: str) -> None:
    """Refuse an image the engine does not hold: no registry is asked, so a missing
    image would otherwise fail late, mid-run, after a pull that cannot work."""
    try:
        client.images.get(name)
    except ImageNotFound:
        raise TrialError(
            f"image {name} is not in the local Docker engine",
            f"build it first (docker build -t {name} ...)",
        ) from None
    except APIError as e:  # e.g. a malformed reference: the engine says why
        raise TrialError(
            f"image {name} cannot be looked up: {e.explanation or e}",
            "name a locally built image (docker images lists them)",
        ) from None


def forward_proxies(routes: list[tuple[str, str]]) -> list[dict[str, str]]:
    """The sidecar's proxies: one per broker, from the address the brokers advertise
    for the lane to the broker's lane proxy on the cluster's network."""
    return [
        {"name": f"to-{upstream.split(':', 1)[0]}", "listen": listen, "upstream": upstream}
        for listen, upstream in routes
    ]


def container_env(env: dict[str, str], bootstrap: str) -> dict[str, str]:
    """The instance's environment: the workload's, with the bootstrap the container
    can reach (the host's loopback addresses mean another namespace in there)."""
    return {**env, "KAFKA_BOOTSTRAP_SERVERS": bootstrap}


def container_name(run_id: str, name: str, index: int) -> str:
    return f"kt-{run_id}-{name}-{index}"


def sidecar_name(run_id: str, index: int) -> str:
    return f"kt-{run_id}-app-net-{index}"


def _wait_while(cond: Callable[[], bool], timeout_s: float) -> None:
    """Until `cond` no longer holds or `timeout_s` has passed: the engine's word on a
    container's state trails what was just done to it."""
    deadline = time.monotonic() + timeout_s
    while cond() and time.monotonic() < deadline:
        time.sleep(0.05)


@dataclass
class AppContainer:
    """One instance of the application as a container: implements
    contracts.app_contract.AppInstance. `ended_by` names the fault (or "harness") that
    ended it, None while it runs or when it ended by itself. Its stdout and stderr are
    appended to the run's files once it has ended (`collect_logs`)."""

    index: int
    container: Container
    lanes: LaneControl
    lane: int
    out_path: Path
    err_path: Path
    stop_grace_s: float = 10.0
    ended_by: str | None = None
    _collected: bool = False
    _stderr: bytes = b""  # what this container wrote to stderr, once collected
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def describe(self) -> dict[str, Any]:
        return {"instance": self.index, "container": self.container.short_id}

    def status(self) -> str:
        """The engine's state: created, running, paused, exited... or removed."""
        try:
            self.container.reload()
        except NotFound:
            return "removed"
        return str(self.container.status)

    def running(self) -> bool:
        # A paused container still holds its process: alive, only frozen.
        return self.status() in ("running", "paused")

    def exit_code(self) -> int | None:
        """The exit code once it has ended; None while it runs or once removed."""
        if self.running():
            return None
        code = (self.container.attrs.get("State") or {}).get("ExitCode")
        return int(code) if code is not None else None

    def _alive_or_raise(self) -> str:
        state = self.status()
        if state not in ("running", "paused"):
            raise RuntimeError(f"container {self.container.short_id} is {state}")
        return state

    def kill(self, by: str) -> dict[str, Any]:
        """SIGKILL, seen to end it: `state` before, `after`, `exit_code`."""
        before = self._alive_or_raise()
        self.ended_by = by
        self.container.kill(signal="SIGKILL")
        _wait_while(self.running, KILL_WAIT_S)
        self.collect_logs()
        return {"state": before, "after": self.status(), "exit_code": self.exit_code()}

    def terminate(self, by: str) -> dict[str, Any]:
        """`docker stop`: SIGTERM, and SIGKILL once `stop_grace_s` has passed."""
        before = self._alive_or_raise()
        self.ended_by = by
        self.container.stop(timeout=math.ceil(self.stop_grace_s))
        self.collect_logs()
        return {"state": before, "after": self.status(), "exit_code": self.exit_code()}

    def pause(self) -> dict[str, Any]:
        """`docker pause` (the cgroup freezer): `was`, and `state` read back, once the
        engine shows it paused or `PAUSE_SEEN_S` has passed (a fresh-clone CI read
        "running" from the engine just after a pause that followed a resume)."""
        before = self._alive_or_raise()
        self.container.pause()
        _wait_while(lambda: self.status() == "running", PAUSE_SEEN_S)
        return {"was": before, "state": self.status()}

    def resume(self) -> dict[str, Any]:
        """Unpause, bounded as a broker's is (freezer.py); the state read back. A
        container that has ended or gone since has nothing to resume: its state says
        so, and a heal does not fail over it."""
        thawed = None
        with contextlib.suppress(NotFound, APIError):
            thawed = unpause(self.container)
        return {"state": self.status()} | ({"thawed": thawed} if thawed else {})

    def cut(self) -> dict[str, Any]:
        return self.lanes.cut_lane(self.lane)

    def uncut(self) -> dict[str, Any]:
        return self.lanes.restore_lane(self.lane)

    def collect_logs(self) -> None:
        """Append what the container wrote to the run's files, once, after it ended
        (the files hold every incarnation of the instance, one after another)."""
        with self._lock:
            if self._collected or self.running():
                return
            self._collected = True
            for path, out, err in ((self.out_path, True, False), (self.err_path, False, True)):
                with contextlib.suppress(NotFound, APIError):
                    data = self.container.logs(stdout=out, stderr=err)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    with path.open("ab") as f:
                        f.write(data)
                    if err:
                        self._stderr = data

    def stderr_tail(self) -> str:
        """The end of what this container (not an earlier start of the instance)
        wrote to stderr, for its exit record; "" while it runs."""
        self.collect_logs()
        return self._stderr[-STDERR_TAIL:].decode(errors="replace")

    def remove(self) -> None:
        """Stop it if it runs (`ended_by` "harness" unless set), keep its logs, and
        remove the container."""
        if self.running():
            with contextlib.suppress(NotFound, APIError, RuntimeError):
                self.terminate(self.ended_by or "harness")
        self.collect_logs()
        with contextlib.suppress(NotFound, APIError):
            self.container.remove(force=True, v=True)


def _api_port(container: Container) -> int:
    ports = container.attrs["NetworkSettings"]["Ports"]
    return int(ports[f"{API_PORT}/tcp"][0]["HostPort"])


def _await_api(toxi: ToxiproxyClient, what: str) -> None:
    deadline = time.monotonic() + SIDECAR_WAIT_S
    while True:
        try:
            toxi.version()
            return
        except ToxiproxyError as e:
            if time.monotonic() > deadline:
                raise TrialError(
                    f"the Toxiproxy sidecar of {what} did not answer: {e}",
                    "check `docker logs` of the sidecar and the engine's health",
                ) from None
            time.sleep(0.2)


def app_sidecar(client: docker.DockerClient, cluster: Cluster, index: int, lane: int) -> Container:
    """The instance's sidecar, running, with a forwarding proxy per broker: the one
    an earlier start of the instance left, or a new one. The docker SDK starts it,
    as provision.py starts the brokers' sidecars: it publishes a port to the host."""
    name = sidecar_name(cluster.run_id, index)
    sidecar: Container | None = None
    with contextlib.suppress(NotFound):
        sidecar = client.containers.get(name)
    if sidecar is not None and sidecar.status != "running":
        sidecar.remove(force=True)  # its namespace is gone with it: start afresh
        sidecar = None
    if sidecar is None:
        sidecar = client.containers.run(
            cluster.images.toxiproxy,
            name=name,
            network=cluster.network_name,
            ports={f"{API_PORT}/tcp": ("127.0.0.1", None)},
            labels=labels(cluster.run_id, APP_NET_ROLE) | {LABEL_APP: str(index)},
            environment={"LOG_LEVEL": "info"},
            detach=True,
        )
        sidecar.reload()
    toxi = ToxiproxyClient(f"http://127.0.0.1:{_api_port(sidecar)}")
    _await_api(toxi, f"app instance {index}")
    have = toxi.proxies()
    for p in forward_proxies(cluster.lane_routes(lane)):
        if p["name"] not in have:
            toxi.create_proxy(p["name"], p["listen"], p["upstream"])
    return sidecar


def _run_instance(image: str, name: str, env: dict[str, str], tags: dict[str, str], ns: str) -> str:
    """Start the instance's container with testcontainers-python; its id."""
    # Imported here: only a run with an image needs it, and it is heavy to import.
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.container import DockerContainer

    # Ryuk, testcontainers' reaper, is an image from Docker Hub, and no registry is
    # used; the run label already has every instance removed with the cluster.
    testcontainers_config.ryuk_disabled = True
    spec = DockerContainer(image, env=env, name=name).with_kwargs(
        labels=tags,
        network_mode=f"container:{ns}",
        # Any network at all: testcontainers would otherwise pick the network of a
        # container it runs in, which conflicts with joining the sidecar's namespace.
        network=None,
    )
    # The image is local (require_local_image): a configured registry prefix
    # (TESTCONTAINERS_HUB_IMAGE_NAME_PREFIX) would name one that is not.
    spec.image = image
    try:
        spec.start()
        return spec.get_container_id()
    finally:
        # Its own engine client is closed: the cluster's client does the rest.
        spec.get_docker_client().client.close()


def start_app_container(
    client: docker.DockerClient,
    cluster: Cluster,
    image: str,
    name: str,
    env: dict[str, str],
    lane: int,
    out_path: Path,
    err_path: Path,
    index: int,
    stop_grace_s: float = 10.0,
) -> AppContainer:
    """Start instance `index` of the application from a local image, as container
    `kt-<run>-<name>-<index>` in its sidecar's namespace (a container of that name
    left by an earlier start is removed: remove() it first to keep its logs). Its
    KAFKA_BOOTSTRAP_SERVERS is set here to what it reaches on client lane `lane`."""
    require_local_image(client, image)
    sidecar = app_sidecar(client, cluster, index, lane)
    cname = container_name(cluster.run_id, name, index)
    with contextlib.suppress(NotFound):
        client.containers.get(cname).remove(force=True, v=True)
    tags = labels(cluster.run_id, APP_ROLE) | {LABEL_APP: str(index)}
    env = container_env(env, cluster.bootstrap_in_network(lane))
    cid = _run_instance(image, cname, env, tags, str(sidecar.id))
    return AppContainer(
        index, client.containers.get(cid), cluster, lane, out_path, err_path, stop_grace_s
    )


def remove_app_containers(client: docker.DockerClient, run_id: str) -> int:
    """Remove the run's app instances and then their sidecars (a warm cluster outlives
    the run's application); how many containers were removed."""
    removed = 0
    for role in (APP_ROLE, APP_NET_ROLE):
        found = client.containers.list(
            all=True, filters={"label": [f"{LABEL_RUN}={run_id}", f"{LABEL_ROLE}={role}"]}
        )
        for c in found:
            with contextlib.suppress(NotFound, APIError):
                c.remove(force=True, v=True)
                removed += 1
    return removed
