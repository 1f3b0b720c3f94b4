"""The cluster: N KRaft nodes, each in a network namespace owned by a Toxiproxy sidecar.

Topology, and why:

- Sidecar `proxy-j` owns node j's network namespace and the broker joins it
  (network_mode=container:...). Killing or restarting the broker keeps the
  namespace, the published ports and every proxy and toxic.
- Every broker advertises loopback addresses for its replication listener
  (127.0.0.1:19100+j) and the quorum lists 127.0.0.1:19200+j for controllers. In
  node i's namespace those ports are proxies in i's own sidecar that forward to
  node j. So every directed link i->j is its own proxy: cutting it leaves i->k
  and j->i untouched.
- The client listener binds 127.0.0.1:9092 inside the namespace; the sidecar
  forwards a published host port to it, and that host port is what the broker
  advertises, so host clients always pass through Toxiproxy.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import time
import uuid
from base64 import urlsafe_b64encode
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata, ConfigResource, NewTopic
from docker.errors import APIError, NotFound
from docker.models.containers import Container

import docker
from harness.errors import TrialError
from harness.images import Images
from harness.log import log
from harness.spec import ClusterSpec, TopicSpec
from harness.toxiproxy import Toxic, ToxiproxyClient, ToxiproxyError

LABEL = "kafka-trial"
LABEL_RUN = "kafka-trial.run"
LABEL_PID = "kafka-trial.owner-pid"
LABEL_HOST = "kafka-trial.owner-host"
LABEL_ROLE = "kafka-trial.role"
LABEL_NODE = "kafka-trial.node"

CLIENT_PORT = 9092
INTERNAL_PORT = 9093
CONTROLLER_PORT = 9094
CLIENT_PROXY_PORT = 19092
CLIENT_LANE_BASE = 9200
INTERNAL_PROXY_BASE = 19100
CONTROLLER_PROXY_BASE = 19200
API_PORT = 8474
QUORUM_STATE = "/var/lib/kafka/data/__cluster_metadata-0/quorum-state"

LinkKind = Literal["internal", "controller", "client"]
CutMode = Literal["drop", "reject"]
CUT_TOXICS = ("kt-cut-up", "kt-cut-down")


def proxy_name(dst: int, kind: LinkKind, lane: int = 0) -> str:
    if kind == "client":
        return "client" if lane == 0 else f"client-{lane}"
    return f"to-{dst}-{kind}"


def client_listener(lane: int) -> tuple[str, int, int]:
    """(listener name, broker port, sidecar container port) of a client lane.

    Each lane is its own listener, advertised at its own host port, so one client
    (a lane) can be cut off a broker while the others still reach it."""
    if lane == 0:
        return "CLIENT", CLIENT_PORT, CLIENT_PROXY_PORT
    return f"CLIENT{lane}", CLIENT_LANE_BASE + lane, CLIENT_PROXY_PORT + lane


@dataclass(frozen=True)
class Link:
    """Connections that `src` opens to `dst` (src=None for host clients)."""

    src: int | None
    dst: int
    kind: LinkKind
    toxi: ToxiproxyClient
    lane: int = 0  # which client lane, for client links

    @property
    def proxy(self) -> str:
        return proxy_name(self.dst, self.kind, self.lane)

    def cut(
        self, mode: CutMode = "drop", streams: tuple[str, ...] = ("upstream", "downstream")
    ) -> None:
        """Cut this link. `streams` narrows a drop to one direction of its connections:
        upstream is what src sends, downstream what dst answers."""
        if mode == "reject":
            # Disabling closes live connections and refuses new ones (both directions).
            self.toxi.set_enabled(self.proxy, False)
            return
        # timeout=0 holds data forever without closing: a silent black hole.
        existing = {t["name"] for t in self.toxi.toxics(self.proxy)}
        for name, stream in zip(CUT_TOXICS, ("upstream", "downstream"), strict=True):
            if stream in streams and name not in existing:
                self.toxi.add_toxic(
                    self.proxy,
                    Toxic(name, "timeout", stream, {"timeout": 0}),  # type: ignore[arg-type]
                )

    def heal(self) -> None:
        """Every toxic off this link, and the link enabled."""
        for t in self.toxi.toxics(self.proxy):
            self.toxi.remove_toxic(self.proxy, t["name"])
        self.toxi.set_enabled(self.proxy, True)

    def uncut(self) -> None:
        """Undo `cut` only: toxics other faults put on this link stay."""
        for t in self.toxi.toxics(self.proxy):
            if t["name"] in CUT_TOXICS:
                self.toxi.remove_toxic(self.proxy, t["name"])
        self.toxi.set_enabled(self.proxy, True)

    def add_toxic(self, toxic: Toxic) -> None:
        self.toxi.add_toxic(self.proxy, toxic)


@dataclass
class Broker:
    node_id: int
    container: Container
    sidecar: Container
    toxi: ToxiproxyClient
    client_ports: tuple[int, ...]  # host port of each client lane

    @property
    def client_port(self) -> int:
        return self.client_ports[0]

    @property
    def name(self) -> str:
        return self.container.name

    def status(self) -> str:
        try:
            self.container.reload()
        except NotFound:
            return "removed"
        return str(self.container.status)

    def kill(self) -> None:
        self.container.kill(signal="SIGKILL")

    def stop(self, timeout_s: int = 30) -> None:
        self.container.stop(timeout=timeout_s)

    def start(self) -> None:
        if self.status() == "paused":
            self.container.unpause()
        elif self.status() != "running":
            self.container.start()

    def pause(self) -> None:
        self.container.pause()

    def resume(self) -> None:
        if self.status() == "paused":
            self.container.unpause()

    def log_paths(self) -> dict[str, Container]:
        return {
            f"kafka-{self.node_id}.log": self.container,
            f"proxy-{self.node_id}.log": self.sidecar,
        }


def _cluster_id() -> str:
    # A leading '-' would read as an option to kafka-storage in other images' scripts.
    while True:
        cid = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def owner_alive(labels: dict[str, str]) -> bool:
    if labels.get(LABEL_HOST) != socket.gethostname():
        return False
    try:
        pid = int(labels.get(LABEL_PID, "0"))
    except ValueError:
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_leftovers(
    client: docker.DockerClient, run: str | None = None, force: bool = False
) -> int:
    """Remove containers, networks and volumes of runs whose owner is gone.

    With `run`, only that run's; with `force`, even those of live owners.
    """
    flt = {"label": [f"{LABEL_RUN}={run}"] if run else [LABEL]}
    removed = 0
    containers = client.containers.list(all=True, filters=flt)
    # Brokers before sidecars: a broker lives in its sidecar's namespace.
    containers.sort(key=lambda c: c.labels.get(LABEL_ROLE) != "broker")
    for c in containers:
        if not (force or run) and owner_alive(c.labels):
            continue
        with contextlib.suppress(NotFound, APIError):
            if c.status == "paused":
                c.unpause()
        with contextlib.suppress(NotFound):
            c.remove(force=True, v=True)
            removed += 1
    for n in client.networks.list(filters=flt):
        if not (force or run) and owner_alive(n.attrs.get("Labels") or {}):
            continue
        with contextlib.suppress(NotFound, APIError):
            n.remove()
            removed += 1
    for v in client.volumes.list(filters=flt):
        if not (force or run) and owner_alive(v.attrs.get("Labels") or {}):
            continue
        with contextlib.suppress(NotFound, APIError):
            v.remove(force=True)
            removed += 1
    return removed


@dataclass
class PartitionState:
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass
class Cluster:
    client: docker.DockerClient
    spec: ClusterSpec
    images: Images
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))
    brokers: dict[int, Broker] = field(default_factory=dict)
    network_name: str = ""
    _admin: AdminClient | None = None

    # --- lifecycle ------------------------------------------------------------

    def _labels(self, role: str, node: int | None = None) -> dict[str, str]:
        labels = {
            LABEL: "1",
            LABEL_RUN: self.run_id,
            LABEL_PID: str(os.getpid()),
            LABEL_HOST: socket.gethostname(),
            LABEL_ROLE: role,
        }
        if node is not None:
            labels[LABEL_NODE] = str(node)
        return labels

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.spec.brokers + 1))

    def _broker_env(self, j: int, cluster_id: str, client_ports: list[int]) -> dict[str, str]:
        lanes = [client_listener(k) for k in range(len(client_ports))]
        voters = ",".join(f"{k}@127.0.0.1:{CONTROLLER_PROXY_BASE + k}" for k in self.node_ids)
        env = {
            "CLUSTER_ID": cluster_id,
            "KAFKA_NODE_ID": str(j),
            "KAFKA_PROCESS_ROLES": "broker,controller",
            "KAFKA_CONTROLLER_QUORUM_VOTERS": voters,
            "KAFKA_LISTENERS": (
                "".join(f"{name}://127.0.0.1:{port}," for name, port, _ in lanes)
                + f"INTERNAL://0.0.0.0:{INTERNAL_PORT},"
                f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}"
            ),
            "KAFKA_ADVERTISED_LISTENERS": (
                "".join(
                    f"{name}://127.0.0.1:{hp},"
                    for (name, _, _), hp in zip(lanes, client_ports, strict=True)
                )
                + f"INTERNAL://127.0.0.1:{INTERNAL_PROXY_BASE + j}"
            ),
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": (
                "".join(f"{name}:PLAINTEXT," for name, _, _ in lanes)
                + "INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
            ),
            "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
            "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
            "KAFKA_LOG_DIRS": "/var/lib/kafka/data",
            "KAFKA_HEAP_OPTS": f"-Xmx{self.spec.broker_heap} -Xms{self.spec.broker_heap}",
        }
        for key, value in self.spec.broker_config.items():
            name = key.replace("_", "__").replace("-", "___").replace(".", "_").upper()
            env[f"KAFKA_{name}"] = value
        return env

    def _host_ports(self, j: int) -> tuple[object, object]:
        base = self.spec.host_port_base
        if base is None:
            return ("127.0.0.1", None), ("127.0.0.1", None)
        return ("127.0.0.1", base + 100 + j - 1), ("127.0.0.1", base + j - 1)

    def _check_ports_free(self) -> None:
        base = self.spec.host_port_base
        if base is None:
            return
        for j in self.node_ids:
            for port in (base + j - 1, base + 100 + j - 1):
                with socket.socket() as s:
                    try:
                        s.bind(("127.0.0.1", port))
                    except OSError:
                        raise TrialError(
                            f"port 127.0.0.1:{port} is in use",
                            "stop what holds it, pick another cluster.host_port_base, "
                            "or unset it to let Docker choose free ports",
                        ) from None

    def start(self) -> None:
        remove_leftovers(self.client)
        self._check_ports_free()
        self.network_name = f"kt-{self.run_id}"
        log(f"starting {self.spec.brokers} KRaft nodes (run {self.run_id})")
        self.client.networks.create(
            self.network_name, driver="bridge", labels=self._labels("network")
        )
        sidecars: dict[int, Container] = {}
        for j in self.node_ids:
            api_bind, client_bind = self._host_ports(j)
            sidecars[j] = self._run_container(
                self.images.toxiproxy,
                name=f"kt-{self.run_id}-proxy-{j}",
                hostname=f"kafka-{j}",
                network=self.network_name,
                networking_config={
                    self.network_name: self.client.api.create_endpoint_config(
                        aliases=[f"kafka-{j}"]
                    )
                },
                ports={
                    f"{API_PORT}/tcp": api_bind,
                    f"{CLIENT_PROXY_PORT}/tcp": client_bind,
                    # Extra client lanes always get free ports chosen by Docker.
                    **{
                        f"{client_listener(k)[2]}/tcp": ("127.0.0.1", None)
                        for k in range(1, self.spec.client_lanes)
                    },
                },
                labels=self._labels("proxy", j),
                environment={"LOG_LEVEL": "info"},
                detach=True,
            )
        cluster_id = _cluster_id()
        for j, sc in sidecars.items():
            sc.reload()
            ports = sc.attrs["NetworkSettings"]["Ports"]
            api = int(ports[f"{API_PORT}/tcp"][0]["HostPort"])
            client_ports = [
                int(ports[f"{client_listener(k)[2]}/tcp"][0]["HostPort"])
                for k in range(self.spec.client_lanes)
            ]
            toxi = ToxiproxyClient(f"http://127.0.0.1:{api}")
            self._await_toxiproxy(toxi, j)
            for k in range(self.spec.client_lanes):
                _, broker_port, proxy_port = client_listener(k)
                toxi.create_proxy(
                    proxy_name(j, "client", k), f"0.0.0.0:{proxy_port}", f"127.0.0.1:{broker_port}"
                )
            for k in self.node_ids:
                host = "127.0.0.1" if k == j else f"kafka-{k}"
                toxi.create_proxy(
                    proxy_name(k, "internal"),
                    f"127.0.0.1:{INTERNAL_PROXY_BASE + k}",
                    f"{host}:{INTERNAL_PORT}",
                )
                toxi.create_proxy(
                    proxy_name(k, "controller"),
                    f"127.0.0.1:{CONTROLLER_PROXY_BASE + k}",
                    f"{host}:{CONTROLLER_PORT}",
                )
            volume = self.client.volumes.create(
                name=f"kt-{self.run_id}-data-{j}", labels=self._labels("volume", j)
            )
            broker = self._run_container(
                self.images.kafka,
                name=f"kt-{self.run_id}-kafka-{j}",
                network_mode=f"container:{sc.id}",
                environment=self._broker_env(j, cluster_id, client_ports),
                volumes={volume.name: {"bind": "/var/lib/kafka/data", "mode": "rw"}},
                labels=self._labels("broker", j),
                detach=True,
            )
            self.brokers[j] = Broker(j, broker, sc, toxi, tuple(client_ports))

    def _run_container(self, image: str, **kw: object) -> Container:
        try:
            return self.client.containers.run(image, **kw)  # type: ignore[arg-type]
        except APIError as e:
            msg = str(e.explanation or e)
            if "port is already allocated" in msg or "address already in use" in msg:
                raise TrialError(
                    f"a host port is in use: {msg[:200]}",
                    "free the port, pick another cluster.host_port_base, or unset it",
                ) from None
            raise

    def _await_toxiproxy(self, toxi: ToxiproxyClient, j: int) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                toxi.version()
                return
            except ToxiproxyError as e:
                if time.monotonic() > deadline:
                    raise TrialError(
                        f"Toxiproxy sidecar of node {j} did not answer: {e}",
                        "check `docker logs` of the proxy container and the engine's health",
                    ) from None
                time.sleep(0.2)

    @property
    def bootstrap(self) -> str:
        return self.bootstrap_for(0)

    def bootstrap_for(self, lane: int) -> str:
        """Bootstrap servers of one client lane (lanes are taken modulo their number)."""
        k = lane % self.spec.client_lanes
        return ",".join(f"127.0.0.1:{b.client_ports[k]}" for b in self.brokers.values())

    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(
                {
                    "bootstrap.servers": self.bootstrap,
                    "socket.timeout.ms": 5000,
                    "log_level": 0,
                    "logger": _quiet_logger(),
                }
            )
        return self._admin

    def _broker_failure(self) -> str | None:
        for b in self.brokers.values():
            if b.status() in ("exited", "dead", "removed"):
                tail = b.container.logs(tail=15).decode(errors="replace").strip().splitlines()
                last = next(
                    (ln for ln in reversed(tail) if "ERROR" in ln or "Exception" in ln),
                    tail[-1] if tail else "(no output)",
                )
                return f"broker {b.node_id} exited: {last[:300]}"
        return None

    def await_registered(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            failure = self._broker_failure()
            if failure:
                raise TrialError(failure, "read logs/kafka-N.log in the run directory")
            try:
                md = self.admin().list_topics(timeout=5)
                if len(md.brokers) == self.spec.brokers:
                    return
                last = f"{len(md.brokers)} of {self.spec.brokers} brokers registered"
            except KafkaException as e:
                last = str(e)
            time.sleep(1)
        raise TrialError(
            f"brokers did not all register within {timeout_s:.0f}s ({last})",
            "read logs/kafka-N.log in the run directory, or raise cluster.startup_timeout_s",
        )

    def create_topic(self, topic: TopicSpec) -> None:
        config = {
            "min.insync.replicas": str(topic.min_insync_replicas),
            "unclean.leader.election.enable": str(topic.unclean_leader_election).lower(),
        }
        fut = self.admin().create_topics(
            [NewTopic(topic.name, topic.partitions, topic.replication_factor, config=config)],
            operation_timeout=30,
        )
        try:
            fut[topic.name].result(60)
        except KafkaException as e:
            raise TrialError(
                f"could not create topic {topic.name}: {e}", "check the topic settings"
            ) from None

    def _metadata(self, topic: str, timeout_s: float) -> ClusterMetadata:
        try:
            return self.admin().list_topics(topic, timeout=timeout_s)
        except KafkaException as first:
            # The harness reaches brokers over the client links, which client faults
            # (degrade, client-partition) break on purpose: ask each broker on its own.
            for b in self.brokers.values():
                one = AdminClient(
                    {
                        "bootstrap.servers": f"127.0.0.1:{b.client_ports[0]}",
                        "socket.timeout.ms": 3000,
                        "log_level": 0,
                        "logger": _quiet_logger(),
                    }
                )
                try:
                    return one.list_topics(topic, timeout=3)
                except KafkaException:
                    continue
            raise first

    def partitions(self, topic: str, timeout_s: float = 5) -> dict[int, PartitionState]:
        md = self._metadata(topic, timeout_s)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return {}
        return {
            p.id: PartitionState(
                p.leader if p.leader >= 0 else None, tuple(p.replicas), tuple(p.isrs)
            )
            for p in t.partitions.values()
        }

    def leader_of(self, topic: str, partition: int) -> int | None:
        try:
            return self.partitions(topic).get(partition, PartitionState(None, (), ())).leader
        except KafkaException:
            return None

    def in_sync(self, topic: str) -> bool:
        try:
            parts = self.partitions(topic)
        except KafkaException:
            return False
        return bool(parts) and all(
            s.leader is not None and set(s.isr) == set(s.replicas) for s in parts.values()
        )

    def await_in_sync(self, topic: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.in_sync(topic):
                return True
            time.sleep(0.5)
        return False

    def active_controller(self) -> int | None:
        """The KRaft quorum leader, from the quorum-state file of every running node.

        Clients cannot ask for it (brokers report a random broker as "controller" in
        KRaft), but each node persists its view of the leader and epoch there; the
        highest epoch wins.
        """
        best: tuple[int, int] | None = None
        for b in self.brokers.values():
            if b.status() != "running":
                continue
            try:
                res = b.container.exec_run(["cat", QUORUM_STATE])
            except (APIError, NotFound):
                continue
            if res.exit_code != 0:
                continue
            try:
                st = json.loads(res.output)
            except ValueError:
                continue
            leader, epoch = int(st.get("leaderId", -1)), int(st.get("leaderEpoch", -1))
            if leader >= 0 and (best is None or epoch > best[1]):
                best = (leader, epoch)
        return None if best is None else best[0]

    def wipe_data(self, node: int) -> None:
        """SIGKILL a broker, empty its data volume, start it: it formats afresh."""
        b = self.brokers[node]
        if b.status() == "paused":
            b.container.unpause()
        if b.status() == "running":
            b.kill()
        mounts = b.container.attrs["Mounts"]
        volume = next(m["Name"] for m in mounts if m["Destination"] == "/var/lib/kafka/data")
        # A one-off container of the same image empties the volume; the broker's own
        # container cannot, it is not running.
        self.client.containers.run(
            self.images.kafka,
            entrypoint=["bash", "-c", "rm -rf /data/* /data/.[!.]*; true"],
            volumes={volume: {"bind": "/data", "mode": "rw"}},
            labels=self._labels("wipe", node),
            network_mode="none",
            remove=True,
        )
        b.container.start()

    def set_topic_config(self, topic: str, config: dict[str, str]) -> None:
        res = ConfigResource("topic", topic, set_config=config)
        for fut in self.admin().alter_configs([res]).values():
            fut.result(30)

    # --- links ------------------------------------------------------------------

    def link(self, src: int | None, dst: int, kind: LinkKind, lane: int = 0) -> Link:
        owner = self.brokers[dst] if src is None else self.brokers[src]
        return Link(src, dst, kind, owner.toxi, lane)

    def peer_links(self, a: int, b: int) -> Iterator[Link]:
        """Both directions of replication and quorum traffic between a and b."""
        for src, dst in ((a, b), (b, a)):
            for kind in ("internal", "controller"):
                yield self.link(src, dst, kind)  # type: ignore[arg-type]

    def heal_network(self) -> None:
        for b in self.brokers.values():
            b.toxi.reset()

    def heal_all(self) -> None:
        """Every proxy enabled, every toxic gone, every broker running."""
        errors: list[str] = []
        for b in self.brokers.values():
            try:
                b.toxi.reset()
            except ToxiproxyError as e:
                errors.append(f"proxy {b.node_id}: {e}")
            try:
                b.start()
            except (APIError, NotFound) as e:
                errors.append(f"broker {b.node_id}: {e}")
        if errors:
            raise RuntimeError("; ".join(errors))

    # --- teardown -------------------------------------------------------------------

    def collect_logs(self, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        for b in self.brokers.values():
            for fname, c in b.log_paths().items():
                with contextlib.suppress(NotFound, APIError):
                    (dest / fname).write_bytes(c.logs(timestamps=True))

    def teardown(self) -> None:
        self._admin = None
        remove_leftovers(self.client, run=self.run_id)


def _quiet_logger() -> object:
    import logging

    lg = logging.getLogger("kafka-trial.librdkafka")
    lg.addHandler(logging.NullHandler())
    lg.propagate = False
    return lg
