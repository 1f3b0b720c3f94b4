"""The cluster: N KRaft nodes, each in a network namespace owned by a Toxiproxy
sidecar (see provision.py for the topology). `Cluster` is a thin facade over
provisioning, links and observation, and implements the ClusterControl verbs the
layers above act through."""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka.admin import AdminClient
from docker.errors import APIError, NotFound
from kafka_trial.cluster import netns_faults
from kafka_trial.cluster.admin_tool import AdminTool
from kafka_trial.cluster.brokers import Broker
from kafka_trial.cluster.clocks import ClockProbe
from kafka_trial.cluster.control import (
    BOTH_STREAMS,
    ClusterControl,
    CutMode,
    LinkId,
    LinkKind,
    MembershipControl,
    PartitionState,
    Quorum,
    Stream,
)
from kafka_trial.cluster.images import Images
from kafka_trial.cluster.leftovers import remove_leftovers
from kafka_trial.cluster.links import Link
from kafka_trial.cluster.membership import DockerMembership
from kafka_trial.cluster.naming import CUT_TOXICS, client_listener
from kafka_trial.cluster.netns_faults import PacketKind
from kafka_trial.cluster.observe import DockerNodes, Observer
from kafka_trial.cluster.provision import Provisioner
from kafka_trial.cluster.reassignment import Reassignment, Reassigns
from kafka_trial.cluster.segments import CorruptMode
from kafka_trial.cluster.settings import ClusterSpec, TopicSpec
from kafka_trial.cluster.toxiproxy import Toxic, ToxiproxyError
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log

import docker

# How long libfaketime keeps an offset it read (FAKETIME_CACHE_DURATION, entrypoint.sh).
FAKETIME_CACHE_S = 1


@dataclass
class Cluster(Reassigns):
    client: docker.DockerClient
    spec: ClusterSpec
    images: Images
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))
    brokers: dict[int, Broker] = field(default_factory=dict)
    # How long after its JVM began to exit a still-running broker is given before
    # heal-all kills it: a sound shutdown takes seconds; one waiting for a controller's
    # approval that no quorum can give takes Kafka's five minutes.
    exiting_grace_s: float = field(default=30.0, repr=False)
    # Nodes whose namespace holds packet rules now: a heal-all clears only these.
    _packet_nodes: set[int] = field(default_factory=set, init=False, repr=False)
    # The nfqueue helpers of reorder and corrupt, by node: their heal stops them.
    _helpers: dict[int, netns_faults.Helper] = field(default_factory=dict, init=False, repr=False)
    _tool: AdminTool | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._provision = Provisioner(
            self.client, self.spec, self.images, self.run_id, self.brokers
        )
        self.observe = Observer(
            DockerNodes(self.brokers), self.spec.brokers, lambda: self.bootstrap
        )
        self.clock_probe = ClockProbe(
            list(range(1, self.spec.brokers + 1)), lambda: self.bootstrap, self.observe.admin
        )
        self.members = DockerMembership(
            self.spec,
            self.brokers,
            self._provision,
            self.observe,
            lambda: self.bootstrap,
            self._admin_tool,
        )
        self.moves = Reassignment(lambda: self.bootstrap, self.observe.admin, self._admin_tool)

    @classmethod
    @contextlib.contextmanager
    def running(
        cls, spec: ClusterSpec | None = None, topics: Sequence[TopicSpec] = ()
    ) -> Iterator[Cluster]:
        """A started cluster with its topics in sync; healed and removed on exit,
        however the block ends."""
        from kafka_trial.cluster.engine import ensure_engine
        from kafka_trial.cluster.images import ensure_images

        spec = spec or ClusterSpec()
        client = ensure_engine()
        cluster = cls(client, spec, ensure_images(client, spec))
        try:
            cluster.start()
            cluster.await_registered(spec.startup_timeout_s)
            for topic in topics:
                cluster.create_topic(topic)
                if not cluster.await_in_sync(topic.name, spec.startup_timeout_s):
                    raise TrialError(
                        f"topic {topic.name} never became fully in sync",
                        "read the brokers' logs (docker logs), or raise startup_timeout_s",
                    )
            yield cluster
        finally:
            try:
                cluster.heal_all()
            except Exception as e:  # removal below makes a failed heal moot
                log(f"heal before teardown incomplete: {e}")
            cluster.teardown()

    # --- lifecycle ------------------------------------------------------------------

    @property
    def node_ids(self) -> list[int]:
        return self._provision.nodes

    @property
    def network_name(self) -> str:
        return self._provision.network_name

    def start(self) -> None:
        self._provision.start()

    @property
    def bootstrap(self) -> str:
        return self.bootstrap_for(0)

    def bootstrap_for(self, lane: int) -> str:
        """Bootstrap servers of one client lane (lanes are taken modulo their number)."""
        k = lane % self.spec.client_lanes
        return ",".join(f"127.0.0.1:{b.client_ports[k]}" for b in self.brokers.values())

    def bootstrap_in_network(self, lane: int) -> str:
        """Bootstrap servers of a client lane as a container on the cluster's network
        reaches them: each broker's lane proxy by its sidecar's name (`kafka-1:19093`).

        Only a bootstrap: the brokers advertise the lane at the host's loopback ports
        (bootstrap_for), so a client that follows the metadata must live in a network
        namespace where those addresses lead to the same proxies. An app container
        gets one (cluster/app_containers.py, routes from `lane_routes`)."""
        k = lane % self.spec.client_lanes
        port = client_listener(k)[2]
        return ",".join(f"kafka-{j}:{port}" for j in sorted(self.brokers))

    def lane_routes(self, lane: int) -> list[tuple[str, str]]:
        """(address the brokers advertise for the lane, in-network address of the
        broker's lane proxy), one per broker: what a forwarder inside a container's
        namespace maps so that the advertised addresses reach the proxies."""
        k = lane % self.spec.client_lanes
        port = client_listener(k)[2]
        return [
            (f"127.0.0.1:{b.client_ports[k]}", f"kafka-{j}:{port}")
            for j, b in sorted(self.brokers.items())
        ]

    def describe(self) -> dict[str, Any]:
        """Enough to reach this cluster again from another process: its run label and
        the bootstrap servers of every client lane."""
        return {
            "run_id": self.run_id,
            "nodes": self.node_ids,
            "bootstrap": [self.bootstrap_for(k) for k in range(self.spec.client_lanes)],
        }

    def collect_logs(self, dest: Path, since: float | None = None) -> None:
        """Every container's output, or only what it wrote from `since` (epoch seconds)
        on: a warm cluster serves several runs, and each keeps its own part."""
        dest.mkdir(parents=True, exist_ok=True)
        extra: dict[str, Any] = {} if since is None else {"since": int(since)}
        for b in self.brokers.values():
            for fname, c in b.log_paths().items():
                with contextlib.suppress(NotFound, APIError):
                    (dest / fname).write_bytes(c.logs(timestamps=True, **extra))

    def delete_topics(self, names: Sequence[str], timeout_s: float = 30) -> None:
        self.observe.delete_topics(names, timeout_s)

    def teardown(self) -> None:
        self.observe.close()
        remove_leftovers(self.client, run=self.run_id)

    def engine_alive(self) -> bool:
        """Whether the Docker engine still answers (a refused socket answers at once)."""
        try:
            return bool(self.client.ping())
        except Exception:  # docker's, requests' and the socket's errors all mean no
            return False

    # --- observation and administration ----------------------------------------------

    def admin(self) -> AdminClient:
        return self.observe.admin()

    def await_registered(self, timeout_s: float) -> None:
        self.observe.await_registered(timeout_s)

    def create_topic(self, topic: TopicSpec) -> None:
        self.observe.create_topic(topic)

    def set_topic_config(self, topic: str, config: dict[str, str]) -> None:
        self.observe.set_topic_config(topic, config)

    def partitions(self, topic: str, timeout_s: float = 5) -> dict[int, PartitionState]:
        return self.observe.partitions(topic, timeout_s)

    def leader_of(self, topic: str, partition: int) -> int | None:
        return self.observe.leader_of(topic, partition)

    def in_sync(self, topic: str) -> bool:
        return self.observe.in_sync(topic)

    def await_in_sync(self, topic: str, timeout_s: float) -> bool:
        return self.observe.await_in_sync(topic, timeout_s)

    def active_controller(self) -> int | None:
        return self.observe.active_controller()

    def elect_leader(self, topic: str, partition: int, unclean: bool) -> None:
        self.observe.elect_leader(topic, partition, unclean)

    # --- membership (cluster/membership.py) -------------------------------------------

    def quorum(self, within_s: float | None = None) -> Quorum:
        return self.members.quorum(within_s)

    def remove_voter(self, node: int, directory_id: str) -> None:
        self.members.remove_voter(node, directory_id)

    def add_voter(self, node: int, timeout_s: float = 60) -> dict[str, Any]:
        return self.members.add_voter(node, timeout_s)

    def placement(self) -> dict[str, dict[int, PartitionState]]:
        return self.members.placement()

    def move_replicas(self, moves: dict[tuple[str, int], list[int]]) -> None:
        self.members.move_replicas(moves)

    def registered_brokers(self) -> dict[int, bool | None]:
        return self.members.registered_brokers()

    def unregister_broker(self, node: int) -> None:
        self.members.unregister_broker(node)

    def add_broker(
        self, node: int, replicas: dict[tuple[str, int], list[int]], timeout_s: float = 120
    ) -> dict[str, Any]:
        return self.members.add_broker(node, replicas, timeout_s)

    def add_packet_fault(
        self,
        node: int,
        kind: PacketKind,
        probability: float,
        kbit: int,
        delay_ms: int = 20,
        seed: int = 0,
        peer: int | None = None,
    ) -> dict[str, Any]:
        if peer is not None and (peer == node or peer not in self.brokers):
            raise ValueError(f"broker {peer} is not a peer of broker {node}")
        to = None if peer is None else self._address(peer)
        peers = [self._address(j) for j in self.brokers if j != node] if to is None else [to]
        self._packet_nodes.add(node)
        made, helper = netns_faults.add(
            self._namespace(node), kind, probability, kbit, peers, delay_ms, seed, to
        )
        if helper is not None:
            self._helpers[node] = helper
        return made

    def clear_packet_faults(self, node: int) -> dict[str, Any]:
        found = netns_faults.clear(self._namespace(node), self._helpers.pop(node, None))
        self._packet_nodes.discard(node)
        return found

    def _namespace(self, node: int) -> netns_faults.Namespace:
        return netns_faults.Namespace(self.brokers[node].sidecar, node)

    def _address(self, node: int) -> str:
        sidecar = self.brokers[node].sidecar
        sidecar.reload()
        return str(sidecar.attrs["NetworkSettings"]["Networks"][self.network_name]["IPAddress"])

    def _admin_tool(self) -> AdminTool:
        # Found (or compiled) once per cluster: each lookup resolves the version's jars
        # and says so, and a membership fault asks the tool about once a second.
        if self._tool is None:
            self._tool = AdminTool.for_version(self.images.kafka_version)
        return self._tool

    # --- links -------------------------------------------------------------------------

    def link(self, src: int | None, dst: int, kind: LinkKind, lane: int = 0) -> Link:
        owner = self.brokers[dst] if src is None else self.brokers[src]
        return Link(src, dst, kind, owner.toxi, lane)

    def _link(self, link: LinkId) -> Link:
        return self.link(link.src, link.dst, link.kind, link.lane)

    def cut(
        self,
        link: LinkId,
        mode: CutMode = "drop",
        streams: tuple[Stream, ...] = BOTH_STREAMS,
    ) -> None:
        self._link(link).cut(mode, streams)

    def uncut(self, link: LinkId) -> None:
        self._link(link).uncut()

    def add_toxic(self, link: LinkId, toxic: Toxic) -> None:
        self._link(link).add_toxic(toxic)

    def cut_lane(self, lane: int, mode: CutMode = "reject") -> dict[str, Any]:
        """Cut one client lane off every broker (an app instance's links): in reject
        mode its proxies disabled, so live connections close and new ones are refused.
        Read back from every sidecar; a proxy still passing raises."""
        k = lane % self.spec.client_lanes
        links = [LinkId(None, j, "client", k) for j in sorted(self.brokers)]
        for lk in links:
            self.cut(lk, mode)
        passing = [lk.dst for lk in links if self._lane_passes(lk)]
        if passing:
            raise RuntimeError(f"client lane {k} still passes to brokers {passing}")
        return {"lane": k, "brokers": [lk.dst for lk in links], "mode": mode}

    def restore_lane(self, lane: int) -> dict[str, Any]:
        """Undo cut_lane (and any other cut of the lane; its other toxics stay)."""
        k = lane % self.spec.client_lanes
        links = [LinkId(None, j, "client", k) for j in sorted(self.brokers)]
        for lk in links:
            self.uncut(lk)
        blocked = [lk.dst for lk in links if not self._lane_passes(lk)]
        if blocked:
            raise RuntimeError(f"client lane {k} still cut from brokers {blocked}")
        return {"lane": k, "brokers": [lk.dst for lk in links]}

    def _lane_passes(self, link: LinkId) -> bool:
        """Whether the link's proxy, as its sidecar reports it, lets data through:
        enabled (a reject cut disables it) and without a cut toxic (a drop cut)."""
        lk = self._link(link)
        proxy = lk.toxi.proxies().get(lk.proxy) or {}
        toxics = {t.get("name") for t in proxy.get("toxics") or []}
        return bool(proxy.get("enabled")) and not toxics & set(CUT_TOXICS)

    def remove_toxic(self, link: LinkId, name: str) -> None:
        lk = self._link(link)
        lk.toxi.remove_toxic(lk.proxy, name)

    # --- processes ----------------------------------------------------------------------

    @property
    def client_lanes(self) -> int:
        return self.spec.client_lanes

    def kill_node(self, node: int) -> None:
        self.brokers[node].kill()

    def stop_node(self, node: int) -> None:
        self.brokers[node].stop()

    def start_node(self, node: int) -> str | None:
        return self.brokers[node].start()

    def pause_node(self, node: int) -> None:
        self.brokers[node].pause()

    def resume_node(self, node: int) -> str | None:
        return self.brokers[node].resume()

    def wipe_node(self, node: int) -> None:
        self._provision.wipe(node)

    def corrupt_segment(
        self, node: int, topic: str, partition: int, mode: CorruptMode, seed: int
    ) -> dict[str, Any]:
        return self._provision.corrupt(node, topic, partition, mode, seed)

    def lose_unfsynced(self, nodes: list[int]) -> dict[int, dict[str, Any]]:
        # One thread a broker: in turn, the first crash would leave the others ~0.5 s
        # (a docker exec each) to replicate and flush what a power failure of them
        # all loses at one instant.
        def crash(node: int) -> dict[str, Any]:
            try:
                return self.brokers[node].fs("lose-unfsynced")
            except TrialError as e:
                return {"error": e.problem}
            except (APIError, NotFound) as e:
                return {"error": f"broker {node}: {e}"}

        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            return dict(zip(nodes, pool.map(crash, nodes), strict=True))

    def settle_storage(self) -> dict[str, int]:
        """Write back what the write-back filesystems hold (kt-lazyfs `checkpoint`), on
        every running broker: files and bytes written, summed."""
        total = {"files": 0, "bytes": 0}
        for b in self.brokers.values():
            if b.storage == "writeback" and b.status() == "running":
                got = b.fs("checkpoint")
                total = {k: total[k] + int(got.get(k, 0)) for k in total}
        return total

    def fill_disk(self, node: int) -> None:
        self.brokers[node].fs("enospc on")

    def free_disk(self, node: int) -> dict[str, Any]:
        b = self.brokers[node]
        if b.status() == "running":
            ans = b.fs("enospc off")
            return {k: ans.get(k, 0) for k in ("refused_writes", "refused_bytes")} | {
                "halted": False
            }
        # A broker whose only log directory failed halts, and its mount (and the full
        # disk) ends with it: its last status says what was refused.
        final = b.fs_final_status() or {}
        b.start()
        return {k: final.get(k) for k in ("refused_writes", "refused_bytes")} | {"halted": True}

    def set_clock(self, node: int, offset_s: int) -> dict[str, Any]:
        self.brokers[node].set_clock(offset_s)
        # libfaketime reads its file again within two of its cache periods: measure
        # until the broker shows the offset, or say what it shows when that is over.
        deadline = time.monotonic() + 2 * FAKETIME_CACHE_S + 3
        while True:
            got = self.clock_probe.offset(node)
            if abs(got["offset_s"] - offset_s) < 0.5 or time.monotonic() > deadline:
                return {"asked_s": offset_s, **got}
            time.sleep(0.3)

    def strobe_clock(
        self, node: int, offset_s: int, period_ms: int, duration_s: float
    ) -> dict[str, Any]:
        self.brokers[node].strobe_clock(offset_s, period_ms, duration_s)
        # Sample from the loop's first write until the JVM has shown both values, or
        # for as long as the strobe runs: libfaketime's cache makes a flip show late,
        # or (at the shortest periods) not at all, and on a loaded host each sample
        # can take a second, so a window of a few periods can miss the offset.
        seen: list[float] = []
        deadline = time.monotonic() + max(duration_s, 2 * period_ms / 1000 + 2 * FAKETIME_CACHE_S)
        while time.monotonic() < deadline:
            seen.append(self.clock_probe.offset(node)["offset_s"])
            if any(abs(x) < 0.5 for x in seen) and any(abs(x - offset_s) < 0.5 for x in seen):
                break
            time.sleep(0.25)
        return {
            "asked_s": offset_s,
            "period_ms": period_ms,
            "min_s": min(seen),
            "max_s": max(seen),
            "samples": len(seen),
        }

    def heal_all(self) -> dict[str, Any]:
        """Every proxy enabled, every toxic gone, every disk writable, every clock
        true, every broker running, and (a dynamic quorum) every node a voter. A broker
        whose JVM had begun to exit and still ran is given `exiting_grace_s` from then,
        killed if it is still running, and started: what it records (`exiting`, by
        node) is what heal-all returns."""
        errors: list[str] = []
        for b in self.brokers.values():
            try:
                b.toxi.reset()
            except ToxiproxyError as e:
                errors.append(f"proxy {b.node_id}: {e}")
            if b.storage == "writeback" and b.status() == "running":
                try:
                    b.fs("enospc off")
                except TrialError as e:
                    errors.append(f"broker {b.node_id}'s disk: {e.problem}")
            if b.clock == "faketime" and b.status() == "running":
                try:
                    b.set_clock(0)
                except TrialError as e:
                    errors.append(f"broker {b.node_id}'s clock: {e.problem}")
            try:
                b.start()
            except (APIError, NotFound) as e:
                errors.append(f"broker {b.node_id}: {e}")
            if b.node_id in self._packet_nodes:  # no namespace holds rules otherwise
                try:
                    self.clear_packet_faults(b.node_id)
                except (TrialError, RuntimeError, OSError) as e:
                    errors.append(f"node {b.node_id}'s packet rules: {e}")
        # After the rest is whole: a shutdown the heals let a controller approve ends
        # by itself within the grace.
        ended: dict[str, Any] = {}
        for b in self.brokers.values():
            try:
                if (did := b.end_exiting(self.exiting_grace_s)) is not None:
                    ended[str(b.node_id)] = did
                    b.start()
            except (APIError, NotFound) as e:
                errors.append(f"broker {b.node_id}, exiting: {e}")
        if ended:
            log(f"heal-all: brokers that were exiting, restarted: {ended}")
        try:
            # A voter a fault removed and nothing added back: the quorum whole again.
            self.members.restore_voters()
        except (RuntimeError, TrialError) as e:
            errors.append(f"voter set: {e}")
        if errors:
            raise RuntimeError("; ".join(errors))
        return {"exiting": ended} if ended else {}


if TYPE_CHECKING:

    def _implements_control(cluster: Cluster) -> ClusterControl:
        # A type checker holds the facade to the protocol the nemesis acts through.
        return cluster

    def _implements_membership(cluster: Cluster) -> MembershipControl:
        return cluster
