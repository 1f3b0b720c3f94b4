"""Provisioning: the network, one Toxiproxy sidecar per node owning its network
namespace, every proxy, the data volumes, and the brokers.

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

import io
import socket
import tarfile
import time
from dataclasses import dataclass, field
from typing import Any

from docker.errors import APIError
from docker.models.containers import Container
from kafka_trial.cluster.brokers import Broker
from kafka_trial.cluster.freezer import unpause
from kafka_trial.cluster.images import Images
from kafka_trial.cluster.leftovers import remove_leftovers
from kafka_trial.cluster.naming import (
    API_PORT,
    CLIENT_PROXY_PORT,
    CONTROLLER_PORT,
    CONTROLLER_PROXY_BASE,
    INTERNAL_PORT,
    INTERNAL_PROXY_BASE,
    client_listener,
    cluster_id,
    labels,
    proxy_name,
)
from kafka_trial.cluster.segments import CorruptMode, plan
from kafka_trial.cluster.settings import ClusterSpec
from kafka_trial.cluster.toxiproxy import ToxiproxyClient, ToxiproxyError
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log

import docker

DATA_DIR = "/var/lib/kafka/data"
BACKING_DIR = "/var/lib/kafka/backing"


def data_volume_path(spec: ClusterSpec) -> str:
    """Where a broker's volume is mounted: the data directory itself, or, on writeback
    storage, the backing directory that kt-lazyfs mounts over the data directory."""
    return BACKING_DIR if spec.storage == "writeback" else DATA_DIR


def storage_options(spec: ClusterSpec, engine_security: list[str]) -> dict[str, Any]:
    """Extra container options for the broker's storage: none for plain storage. For
    writeback, the least that mounts FUSE: the device and CAP_SYS_ADMIN (Docker's
    default seccomp profile allows mount(2) with it); where the engine confines
    containers with AppArmor, whose docker-default profile denies every mount, also
    apparmor=unconfined."""
    if spec.storage != "writeback":
        return {}
    opts: dict[str, Any] = {
        "devices": ["/dev/fuse:/dev/fuse:rwm"],
        "cap_add": ["SYS_ADMIN"],
    }
    if any("apparmor" in o for o in engine_security):
        opts["security_opt"] = ["apparmor=unconfined"]
    return opts


@dataclass
class Provisioner:
    client: docker.DockerClient
    spec: ClusterSpec
    images: Images
    run_id: str
    brokers: dict[int, Broker] = field(default_factory=dict)
    network_name: str = ""
    # A dynamic quorum's initial voters' directory ids, one per node, for the cluster's
    # life: a wiped node formats again with its own.
    directory_ids: dict[int, str] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.directory_ids = {j: cluster_id() for j in self.nodes}

    @property
    def nodes(self) -> list[int]:
        return list(range(1, self.spec.brokers + 1))

    def _broker_env(self, j: int, cid: str, client_ports: list[int]) -> dict[str, str]:
        lanes = [client_listener(k) for k in range(len(client_ports))]
        env = {
            "CLUSTER_ID": cid,
            "KAFKA_NODE_ID": str(j),
            "KAFKA_PROCESS_ROLES": "broker,controller",
            **self._quorum_env(j),
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
                + self._advertised_controller(j)
            ),
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": (
                "".join(f"{name}:PLAINTEXT," for name, _, _ in lanes)
                + "INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
            ),
            "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
            "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
            "KAFKA_LOG_DIRS": DATA_DIR,
            "KAFKA_HEAP_OPTS": f"-Xmx{self.spec.broker_heap} -Xms{self.spec.broker_heap}",
        }
        if self.spec.broker_jvm_opts:
            env["KAFKA_OPTS"] = self.spec.broker_jvm_opts
        if self.spec.storage == "writeback":
            env["KT_STORAGE"] = "writeback"
        if self.spec.clock == "faketime":
            env["KT_CLOCK"] = "faketime"
        for key, value in self.spec.broker_config.items():
            name = key.replace("_", "__").replace("-", "___").replace(".", "_").upper()
            env[f"KAFKA_{name}"] = value
        return env

    def _quorum_env(self, j: int) -> dict[str, str]:
        """How node j finds the controller quorum. Static: the fixed voter set. Dynamic
        (KIP-853): only where to bootstrap from, with every node's storage formatted
        with one voter set (KT_INITIAL_CONTROLLERS, read by the entrypoint), each
        voter's directory id fixed by it, so that the voters can change later."""
        at = {k: f"127.0.0.1:{CONTROLLER_PROXY_BASE + k}" for k in self.nodes}
        if self.spec.quorum == "static":
            return {"KAFKA_CONTROLLER_QUORUM_VOTERS": ",".join(f"{k}@{a}" for k, a in at.items())}
        initial = ",".join(f"{k}@{a}:{self.directory_ids[k]}" for k, a in at.items())
        return {
            "KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS": ",".join(at.values()),
            "KT_INITIAL_CONTROLLERS": initial,
        }

    def _advertised_controller(self, j: int) -> str:
        """A dynamic quorum's voter is reached at what its controller advertises once it
        is added back: the address the other nodes' proxies forward to it."""
        if self.spec.quorum == "static":
            return ""
        return f",CONTROLLER://127.0.0.1:{CONTROLLER_PROXY_BASE + j}"

    def _host_ports(self, j: int) -> tuple[object, object]:
        base = self.spec.host_port_base
        if base is None:
            return ("127.0.0.1", None), ("127.0.0.1", None)
        return ("127.0.0.1", base + 100 + j - 1), ("127.0.0.1", base + j - 1)

    def _check_ports_free(self) -> None:
        base = self.spec.host_port_base
        if base is None:
            return
        for j in self.nodes:
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
        """Network, sidecars with their proxies, volumes and brokers; each broker is
        added to `brokers` as soon as it exists, so a failed start still tears down."""
        remove_leftovers(self.client)
        self._check_ports_free()
        self.network_name = f"kt-{self.run_id}"
        log(f"starting {self.spec.brokers} KRaft nodes (run {self.run_id})")
        self.client.networks.create(
            self.network_name, driver="bridge", labels=labels(self.run_id, "network")
        )
        sidecars = {j: self._start_sidecar(j) for j in self.nodes}
        cid = cluster_id()
        security: list[str] = []
        if self.spec.storage == "writeback":
            security = self.client.info().get("SecurityOptions") or []
        storage = storage_options(self.spec, security)
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
            for k in self.nodes:
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
                name=f"kt-{self.run_id}-data-{j}", labels=labels(self.run_id, "volume", j)
            )
            broker = self._run_container(
                self.images.kafka,
                name=f"kt-{self.run_id}-kafka-{j}",
                network_mode=f"container:{sc.id}",
                environment=self._broker_env(j, cid, client_ports),
                volumes={volume.name: {"bind": data_volume_path(self.spec), "mode": "rw"}},
                labels=labels(self.run_id, "broker", j),
                detach=True,
                **storage,
            )
            self.brokers[j] = Broker(
                j,
                broker,
                sc,
                toxi,
                tuple(client_ports),
                storage=self.spec.storage,
                clock=self.spec.clock,
            )

    def _start_sidecar(self, j: int) -> Container:
        """Node j's Toxiproxy: it owns the node's network namespace and name, so the
        broker joins it and every byte to or from the broker passes a proxy."""
        api_bind, client_bind = self._host_ports(j)
        return self._run_container(
            self.images.toxiproxy,
            name=f"kt-{self.run_id}-proxy-{j}",
            hostname=f"kafka-{j}",
            network=self.network_name,
            networking_config={
                self.network_name: self.client.api.create_endpoint_config(aliases=[f"kafka-{j}"])
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
            labels=labels(self.run_id, "proxy", j),
            environment={"LOG_LEVEL": "info"},
            detach=True,
        )

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

    def _volume(self, node: int) -> str:
        mounts = self.brokers[node].container.attrs["Mounts"]
        return str(next(m["Name"] for m in mounts if m["Destination"] in (DATA_DIR, BACKING_DIR)))

    def _on_volume(self, node: int, script: str, role: str) -> str:
        """A bash script in a one-off container of the broker's image with its data
        volume at /data: the broker's own container cannot run it, it is down."""
        out = self.client.containers.run(
            self.images.kafka,
            entrypoint=["bash", "-c", script],
            volumes={self._volume(node): {"bind": "/data", "mode": "rw"}},
            labels=labels(self.run_id, role, node),
            network_mode="none",
            remove=True,
        )
        return out.decode(errors="replace") if isinstance(out, bytes) else str(out)

    def _read(self, node: int, path: str) -> bytes:
        stream, _ = self.brokers[node].container.get_archive(path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            f = tar.extractfile(member) if member else None
            return f.read() if f else b""

    def corrupt(
        self, node: int, topic: str, partition: int, mode: CorruptMode, seed: int
    ) -> dict[str, Any]:
        """Corrupt the tail of a down broker's active segment of topic-partition (its
        newest .log); read back, so what it answers is what the file now holds."""
        b = self.brokers[node]
        if b.status() in ("running", "paused"):
            raise TrialError(f"broker {node} is {b.status()}", "stop or kill it first")
        rel = f"{topic}-{partition}"
        names = self._on_volume(node, f"ls /data/{rel} 2>/dev/null; true", "corrupt").split()
        logs = sorted(n for n in names if n.endswith(".log"))
        if not logs:
            return {"error": f"broker {node} holds no segment of {rel}"}
        path = f"{data_volume_path(self.spec)}/{rel}/{logs[-1]}"
        data = self._read(node, path)
        damage = plan(data, mode, seed)
        if damage is None:
            return {"error": f"broker {node}'s active segment of {rel} ({logs[-1]}) is empty"}
        target = f"/data/{rel}/{logs[-1]}"
        if mode == "truncate":
            script = f"truncate -s {damage.size_after} {target}"
        else:
            new = damage.apply(data)
            script = "; ".join(
                f"printf '\\x{new[i]:02x}' | dd of={target} bs=1 seek={i} count=1 "
                "conv=notrunc status=none"
                for i in sorted({bit // 8 for bit in damage.flips})
            )
        self._on_volume(node, f"set -e; {script}", "corrupt")
        if self._read(node, path) != damage.apply(data):
            raise TrialError(
                f"the corruption of {path} on broker {node} did not hold",
                "see the engine's log: the one-off container's write did not land",
            )
        return {"file": f"{rel}/{logs[-1]}", **damage.describe()}

    def wipe(self, node: int, new_replica: bool = False) -> None:
        """SIGKILL a broker, empty its data volume, start it: it formats afresh. With
        `new_replica`, on a dynamic quorum, it formats as a new replica of the quorum
        (a fresh directory id, an observer) instead of as its initial voter again."""
        b = self.brokers[node]
        if b.status() == "paused":
            unpause(b.container)
        if b.status() == "running":
            b.kill()
        mark = "; touch /data/kt-new-replica" if new_replica else ""
        self._on_volume(node, f"rm -rf /data/* /data/.[!.]*{mark}; true", "wipe")
        b.container.start()
