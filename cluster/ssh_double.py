"""A test double of `cluster.kind: ssh`: N KRaft nodes (broker and controller each)
in containers that run sshd, for CI and for trying the SSH kind by hand.

kafka-trial reaches a double only as it would reach machines it did not build:
over SSH on a published 127.0.0.1 port, with a key made for this double, and
through each broker's published client port. The containers have NET_ADMIN so the
faults' iptables and tc commands work inside them; sshd is their PID 1, so a killed
JVM leaves the node (and its network state) up.

The containers and network carry `kafka-trial-double=<id>`, not the project's
`kafka-trial` label: the Docker kind's cleanup of leftovers must not remove a double
a user started.

    python -m kafka_trial.cluster.ssh_double up DIR     # prints DIR/inventory.yaml
    python -m kafka_trial.cluster.ssh_double down DIR
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from docker.errors import APIError, NotFound
from docker.models.containers import Container
from kafka_trial.cluster import host
from kafka_trial.cluster.images import (
    DEBIAN_MIRROR,
    Images,
    _build,
    _digest,
    _have,
    docker_dir,
)
from kafka_trial.cluster.naming import CLIENT_PORT, CONTROLLER_PORT, INTERNAL_PORT, cluster_id
from kafka_trial.cluster.settings import BROKER_JVM_OPTS, DEFAULT_BROKER_CONFIG
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log

import docker

LABEL = "kafka-trial-double"
LABEL_NODE = "kafka-trial-double.node"
LABEL_PID = "kafka-trial-double.owner-pid"
IMAGE_REPO = "kafka-trial/sshd-kafka"
SSHD_FILES = ("Dockerfile", "init.sh", "broker", "sshd.conf")
STATE_FILE = "double.json"
INVENTORY_FILE = "inventory.yaml"
KEY_FILE = "id_ed25519"
DATA_DIR = "/var/lib/kafka/data"
SERVER_LOG = "/var/log/kafka/server.log"


def sshd_image(client: docker.DockerClient, images: Images) -> str:
    """The double's image on top of the project's Kafka image, built once per base
    image and content of docker/sshd."""
    src = docker_dir() / "sshd"
    tag = f"{IMAGE_REPO}:{_digest(images.kafka, *((src / f).read_bytes() for f in SSHD_FILES))}"
    if _have(client, tag):
        return tag
    # Two processes building the same tag would both pay for apt; one waits instead.
    with host.host_lock("images", f"building {tag}"):
        if _have(client, tag):
            return tag
        log(f"building {tag} (sshd, iptables and tc on {images.kafka})")
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kt-sshd-") as tmp:
            for f in SSHD_FILES:
                shutil.copy(src / f, Path(tmp) / f)
            _build(client, Path(tmp), tag, {"BASE": images.kafka, "DEBIAN_MIRROR": DEBIAN_MIRROR})
        log(f"{tag} ready in {time.monotonic() - t0:.0f}s")
    return tag


def _keypair(workdir: Path) -> tuple[Path, str]:
    """A fresh ed25519 key pair in workdir: the private key file and the public line."""
    key = workdir / KEY_FILE
    for p in (key, key.with_suffix(".pub")):
        p.unlink(missing_ok=True)
    try:
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kafka-trial-double", "-f", key],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as e:
        raise TrialError(
            f"ssh-keygen could not make the double's key: {e}", "install openssh-client"
        ) from None
    return key, key.with_suffix(".pub").read_text().strip()


def _free_port() -> int:
    # Docker would choose a port too, but the broker must advertise its client port
    # before it starts, so the port is chosen first.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _prop_env(name: str) -> str:
    """A server property as the entrypoint's KAFKA_ variable (as cluster/provision.py)."""
    return "KAFKA_" + name.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def node_env(j: int, names: dict[int, str], client_port: int, cid: str) -> dict[str, str]:
    voters = ",".join(f"{k}@{n}:{CONTROLLER_PORT}" for k, n in sorted(names.items()))
    env = {
        "CLUSTER_ID": cid,
        "KAFKA_NODE_ID": str(j),
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": voters,
        "KAFKA_LISTENERS": (
            f"CLIENT://0.0.0.0:{CLIENT_PORT},INTERNAL://0.0.0.0:{INTERNAL_PORT},"
            f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}"
        ),
        # Clients reach the broker only through the port published on the host.
        "KAFKA_ADVERTISED_LISTENERS": (
            f"CLIENT://127.0.0.1:{client_port},INTERNAL://{names[j]}:{INTERNAL_PORT}"
        ),
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": (
            "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
        ),
        "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LOG_DIRS": DATA_DIR,
        "KAFKA_HEAP_OPTS": "-Xmx512m -Xms512m",
        "KAFKA_OPTS": BROKER_JVM_OPTS,
    }
    for key, value in DEFAULT_BROKER_CONFIG.items():
        env[_prop_env(key)] = value
    return env


@dataclass
class SshDouble:
    id: str
    client: docker.DockerClient
    workdir: Path
    key: Path
    network: str
    containers: dict[int, Container] = field(default_factory=dict)
    ssh_ports: dict[int, int] = field(default_factory=dict)
    client_ports: dict[int, int] = field(default_factory=dict)

    @property
    def node_ids(self) -> list[int]:
        return sorted(self.containers)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.client_ports[j]}" for j in self.node_ids)

    @property
    def inventory_path(self) -> Path:
        return self.workdir / INVENTORY_FILE

    def exec(self, node: int, cmd: str) -> tuple[int, str]:
        """`cmd` with bash in node's container, past SSH: for tests' own checks only."""
        res = self.containers[node].exec_run(["bash", "-c", cmd])
        return int(res.exit_code), res.output.decode(errors="replace")

    def inventory(self) -> dict[str, object]:
        """What `cluster/inventory.py` reads; the peers' address is the container name,
        which Docker's DNS resolves inside the nodes (iptables resolves it on -s/-d)."""
        return {
            "bootstrap": self.bootstrap,
            "nodes": [
                {
                    "node_id": j,
                    "host": "127.0.0.1",
                    "ssh_port": self.ssh_ports[j],
                    "user": "root",
                    "key": str(self.key.resolve()),
                    "address": self.containers[j].name,
                    "interface": "eth0",
                    "ports": {
                        "client": CLIENT_PORT,
                        "internal": INTERNAL_PORT,
                        "controller": CONTROLLER_PORT,
                    },
                    "start": "/opt/kt/broker start",
                    "stop": "/opt/kt/broker stop",
                    "pgrep": "kafka\\.Kafka",
                    "data_dirs": [DATA_DIR],
                    "log_files": [SERVER_LOG],
                    "clock": False,
                }
                for j in self.node_ids
            ],
        }

    def write_inventory(self) -> Path:
        header = (
            f"# kafka-trial SSH test double {self.id} (python -m kafka_trial.cluster.ssh_double)\n"
        )
        self.inventory_path.write_text(header + yaml.safe_dump(self.inventory(), sort_keys=False))
        return self.inventory_path

    def await_ready(self, timeout_s: float = 180.0) -> None:
        """Every node answers SSH and every broker is registered, or TrialError."""
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        admin = _quiet_admin(self.bootstrap)
        while time.monotonic() < deadline:
            self._raise_if_exited()
            silent = [j for j in self.node_ids if not _ssh_banner(self.ssh_ports[j])]
            if silent:
                last = f"sshd of nodes {silent} not answering"
            else:
                try:
                    n = len(admin.list_topics(timeout=5).brokers)
                    if n == len(self.containers):
                        return
                    last = f"{n} of {len(self.containers)} brokers registered"
                except KafkaException as e:
                    last = str(e)
            time.sleep(0.5)
        raise TrialError(
            f"the SSH double {self.id} was not ready within {timeout_s:.0f}s ({last})",
            f"read {SERVER_LOG} in its containers (docker exec kt-sshd-{self.id}-N ...)",
        )

    def _raise_if_exited(self) -> None:
        for j, c in self.containers.items():
            c.reload()
            if c.status in ("exited", "dead"):
                tail = c.logs(tail=5).decode(errors="replace").strip()
                raise TrialError(
                    f"node {j} of the SSH double {self.id} exited: {tail[-300:]}",
                    f"docker logs {c.name}",
                )

    def teardown(self) -> None:
        remove_double(self.client, self.id)


def _quiet_admin(bootstrap: str) -> AdminClient:
    # Brokers that are not up yet are expected here: librdkafka's complaints are noise.
    quiet = logging.getLogger("kafka-trial.ssh-double.librdkafka")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000, "logger": quiet})


def _ssh_banner(port: int) -> bool:
    """sshd itself answers: Docker's port proxy accepts even when nothing listens."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            return s.recv(8).startswith(b"SSH-")
    except OSError:
        return False


# The data directory's filesystem: a run of the suite writes a few tens of MB a broker.
DATA_FS_MB = 768


def remove_double(client: docker.DockerClient, double_id: str) -> None:
    """Every container and network of the double; what is gone already is no error."""
    flt = {"label": [f"{LABEL}={double_id}"]}
    for c in client.containers.list(all=True, filters=flt):
        with contextlib.suppress(NotFound):
            c.remove(force=True)
    for n in client.networks.list(filters=flt):
        with contextlib.suppress(NotFound):
            n.remove()


def _run_node(
    client: docker.DockerClient, image: str, d: SshDouble, j: int, env: dict[str, str]
) -> Container:
    name = f"kt-sshd-{d.id}-{j}"
    return client.containers.run(
        image,
        name=name,
        hostname=name,
        network=d.network,
        environment=env,
        # NET_ADMIN alone: iptables and tc in the node's own namespace, nothing more.
        cap_add=["NET_ADMIN"],
        ports={
            "22/tcp": ("127.0.0.1", d.ssh_ports[j]),
            f"{CLIENT_PORT}/tcp": ("127.0.0.1", d.client_ports[j]),
        },
        labels={LABEL: d.id, LABEL_NODE: str(j), LABEL_PID: str(os.getpid())},
        # A filesystem of the node's own under the data directory: `disk-full` fills
        # what it has free, which on the container's overlay would be the host's disk.
        tmpfs={DATA_DIR: f"size={DATA_FS_MB}m"},
        detach=True,
    )


def start_double(
    client: docker.DockerClient, images: Images, workdir: Path, nodes: int = 3
) -> SshDouble:
    """Build (if need be) and start a double; removed again if any step fails."""
    image = sshd_image(client, images)
    workdir.mkdir(parents=True, exist_ok=True)
    key, pub = _keypair(workdir)
    double_id = uuid.uuid4().hex[:8]
    d = SshDouble(double_id, client, workdir, key, f"kt-sshd-{double_id}")
    (workdir / STATE_FILE).write_text(json.dumps({"id": double_id, "network": d.network}))
    log(f"starting SSH double {double_id}: {nodes} KRaft nodes")
    try:
        client.networks.create(d.network, driver="bridge", labels={LABEL: double_id})
        names = {j: f"kt-sshd-{double_id}-{j}" for j in range(1, nodes + 1)}
        cid = cluster_id()
        for j in names:
            d.containers[j] = _start_node(client, image, d, j, names, cid, pub)
        d.write_inventory()
    except BaseException:
        remove_double(client, double_id)
        raise
    return d


def _start_node(
    client: docker.DockerClient,
    image: str,
    d: SshDouble,
    j: int,
    names: dict[int, str],
    cid: str,
    pub: str,
) -> Container:
    # A port found free can be taken before Docker binds it: a few fresh tries.
    for attempt in range(3):
        d.ssh_ports[j], d.client_ports[j] = _free_port(), _free_port()
        env = node_env(j, names, d.client_ports[j], cid) | {"KT_AUTHORIZED_KEYS": pub}
        try:
            return _run_node(client, image, d, j, env)
        except APIError as e:
            msg = str(e.explanation or e)
            if attempt == 2 or not ("already allocated" in msg or "address already in use" in msg):
                raise
            with contextlib.suppress(NotFound):
                client.containers.get(names[j]).remove(force=True)
    raise AssertionError("unreachable")


@contextlib.contextmanager
def ssh_double(
    client: docker.DockerClient, images: Images, workdir: Path, nodes: int = 3
) -> Iterator[SshDouble]:
    """A started double (not yet ready: see `await_ready`), removed however the block
    ends."""
    d = start_double(client, images, workdir, nodes)
    try:
        yield d
    finally:
        d.teardown()


def _up(workdir: Path, nodes: int, timeout_s: float) -> int:
    from kafka_trial.cluster.engine import ensure_engine
    from kafka_trial.cluster.images import ensure_images
    from kafka_trial.cluster.settings import ClusterSpec

    client = ensure_engine()
    d = start_double(client, ensure_images(client, ClusterSpec()), workdir, nodes)
    try:
        t0 = time.monotonic()
        d.await_ready(timeout_s)
        log(f"SSH double {d.id} ready in {time.monotonic() - t0:.0f}s")
    except BaseException:
        d.teardown()
        raise
    print(d.inventory_path.resolve())
    return 0


def _down(workdir: Path) -> int:
    from kafka_trial.cluster.engine import ensure_engine

    state = workdir / STATE_FILE
    if not state.is_file():
        raise TrialError(f"{state} does not exist", "give the DIR that `up` was given")
    double_id = json.loads(state.read_text())["id"]
    remove_double(ensure_engine(), double_id)
    state.unlink()
    log(f"SSH double {double_id} removed")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m kafka_trial.cluster.ssh_double",
        description="a local Kafka cluster to try `cluster.kind: ssh` on",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start a double; prints its inventory's path")
    up.add_argument("dir", type=Path, help="where the key, inventory and state go")
    up.add_argument("--nodes", type=int, default=3)
    up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for it")
    down = sub.add_parser("down", help="remove the double started in DIR")
    down.add_argument("dir", type=Path)
    args = p.parse_args(argv)
    try:
        return _up(args.dir, args.nodes, args.timeout) if args.cmd == "up" else _down(args.dir)
    except TrialError as e:
        print(e.one_line(), file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
