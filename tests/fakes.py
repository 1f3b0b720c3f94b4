"""An in-memory cluster that speaks the ClusterControl verbs, for unit tests of the
nemesis in milliseconds. It is never a stand-in for Kafka: it only remembers which
nodes run, which links are cut or slowed, and moves leadership plausibly."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_trial.cluster.control import (
    BOTH_STREAMS,
    CutMode,
    LinkId,
    PartitionState,
    Quorum,
    Refused,
    Stream,
)
from kafka_trial.cluster.throttle import RATES as THROTTLE_RATES
from kafka_trial.cluster.throttle import REPLICAS as THROTTLE_REPLICAS
from kafka_trial.cluster.toxiproxy import Toxic


@dataclass
class FakeCluster:
    brokers: int = 3
    client_lanes: int = 1
    topic: str = "trial"
    n_partitions: int = 3
    fail_verbs: set[str] = field(default_factory=set)  # verbs that raise, to test failures
    engine_up: bool = True  # what engine_alive says: False plays a Docker engine that died
    state: dict[int, str] = field(default_factory=dict)  # node -> running|paused|exited
    cuts: dict[LinkId, tuple[CutMode, tuple[Stream, ...]]] = field(default_factory=dict)
    toxics: dict[LinkId, dict[str, Toxic]] = field(default_factory=dict)
    leaders: dict[int, int] = field(default_factory=dict)
    controller: int = 1
    wiped: list[int] = field(default_factory=list)
    storage: str = "writeback"  # cluster.storage: plain brokers cannot lose unfsynced writes
    full: set[int] = field(default_factory=set)  # brokers whose disk is full
    corrupted: list[int] = field(default_factory=list)
    clock: str = "faketime"  # cluster.clock: real brokers cannot have their clocks set
    clocks: dict[int, int] = field(default_factory=dict)  # node -> offset (0: absent)
    clock_ignored: set[int] = field(default_factory=set)  # nodes whose clock shows no offset
    empty_segments: set[int] = field(default_factory=set)  # brokers with nothing to corrupt
    dirty_bytes: int = 4096  # what each broker holds unfsynced when it loses power
    calls: list[tuple[str, object]] = field(default_factory=list)
    assignments: dict[int, tuple[int, ...]] = field(default_factory=dict)  # partition -> replicas
    packet_faults: dict[int, str] = field(default_factory=dict)  # node -> kind
    packet_links: dict[int, int] = field(default_factory=dict)  # node -> peer (scope link)
    # Paused brokers the engine cannot unpause: resuming them thaws their freezer.
    stuck_paused: set[int] = field(default_factory=set)
    # Membership: the controllers' voter set (node -> directory id), its kind, the
    # brokers unregistered, and planted failures: a removal the quorum never shows,
    # replicas that never move, a broker that stays registered.
    voters: dict[int, str] = field(default_factory=dict)
    quorum_mode: str = "dynamic"
    unregistered: set[int] = field(default_factory=set)
    sticky_voters: bool = False
    stuck_moves: bool = False
    # The replication throttle's configs, by broker id (str) or topic name; brokers
    # that take no throttle, and a cluster that never deletes one (planted failures).
    throttles: dict[str, dict[str, str]] = field(default_factory=dict)
    throttle_ignored: set[int] = field(default_factory=set)
    sticky_throttle: bool = False
    sticky_registration: bool = False

    def engine_alive(self) -> bool:
        return self.engine_up

    def __post_init__(self) -> None:
        self.state = dict.fromkeys(self.node_ids, "running")
        self.leaders = {p: self.node_ids[p % self.brokers] for p in range(self.n_partitions)}
        self.voters = {n: f"dir-{n}" for n in self.node_ids}

    # --- observation ------------------------------------------------------------

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    def _live(self) -> list[int]:
        return [n for n, s in self.state.items() if s == "running"]

    def _verb(self, name: str, arg: object) -> None:
        self.calls.append((name, arg))
        if name in self.fail_verbs:
            raise RuntimeError(f"{name} failed (planted)")

    def _isr(self, leader: int | None) -> tuple[int, ...]:
        if leader is None:
            return ()
        return tuple(
            n for n in self._live() if n == leader or LinkId(n, leader, "internal") not in self.cuts
        )

    def partitions(self, topic: str, timeout_s: float = 5) -> dict[int, PartitionState]:
        if topic != self.topic:
            return {}
        every = tuple(self.node_ids)
        out = {}
        for p, lead in self.leaders.items():
            replicas = self.assignments.get(p, every)
            isr = tuple(n for n in self._isr(lead) if n in replicas)
            out[p] = PartitionState(lead, replicas, isr)
        return out

    def active_controller(self) -> int | None:
        return self.controller if self.state.get(self.controller) == "running" else None

    def await_registered(self, timeout_s: float) -> None:
        if len(self._live()) != self.brokers:
            raise RuntimeError("not every broker is running")

    def await_in_sync(self, topic: str, timeout_s: float) -> bool:
        return all(set(s.isr) == set(s.replicas) for s in self.partitions(topic).values())

    @property
    def whole(self) -> bool:
        return (
            not self.cuts
            and not self.full
            and not self.clocks
            and not any(self.toxics.values())
            and not self.packet_faults
            and self.await_in_sync(self.topic, 0)
            and len(self._live()) == self.brokers
            and sorted(self.voters) == self.node_ids
            and not self.unregistered
        )

    # --- processes ----------------------------------------------------------------

    def _down(self, node: int, how: str) -> None:
        self.state[node] = how
        for p, lead in self.leaders.items():
            if lead == node:
                live = [n for n in self._live() if n != node]
                self.leaders[p] = live[0] if live else lead
        if self.controller == node:
            live = self._live()
            self.controller = live[0] if live else node

    def kill_node(self, node: int) -> None:
        self._verb("kill_node", node)
        self._down(node, "exited")

    def stop_node(self, node: int) -> None:
        self._verb("stop_node", node)
        self._down(node, "exited")

    def pause_node(self, node: int) -> None:
        self._verb("pause_node", node)
        self._down(node, "paused")

    def start_node(self, node: int) -> str | None:
        self._verb("start_node", node)
        was = self.state[node]
        self.state[node] = "running"
        return self._thawed(node) if was == "paused" else None

    def resume_node(self, node: int) -> str | None:
        self._verb("resume_node", node)
        if self.state[node] == "paused":
            self.state[node] = "running"
            return self._thawed(node)
        return None

    def _thawed(self, node: int) -> str | None:
        return (
            f"/sys/fs/cgroup/freezer/docker/{node}/freezer.state"
            if node in self.stuck_paused
            else None
        )

    def wipe_node(self, node: int) -> None:
        self._verb("wipe_node", node)
        self.wiped.append(node)
        self.state[node] = "running"

    def lose_unfsynced(self, nodes: list[int]) -> dict[int, dict[str, object]]:
        self._verb("lose_unfsynced", list(nodes))
        out: dict[int, dict[str, object]] = {}
        for n in nodes:
            if self.storage != "writeback":
                out[n] = {"error": f"broker {n} has no write-back filesystem"}
            elif self.state[n] != "running":
                out[n] = {"error": f"broker {n} is {self.state[n]}"}
            else:
                self._down(n, "exited")
                out[n] = {
                    "files": 1,
                    "bytes": self.dirty_bytes,
                    "paths": ["trial-0/00.log"],
                    "process": "killed",
                }
        return out

    def corrupt_segment(
        self, node: int, topic: str, partition: int, mode: str, seed: int
    ) -> dict[str, object]:
        self._verb("corrupt_segment", (node, mode))
        if self.state[node] in ("running", "paused"):
            raise RuntimeError(f"broker {node} is {self.state[node]}")
        if node in self.empty_segments:
            return {"error": f"broker {node} holds no segment of {topic}-{partition}"}
        self.corrupted.append(node)
        return {"file": f"{topic}-{partition}/00.log", "mode": mode, "offsets": [90, 99]}

    def set_clock(self, node: int, offset_s: int) -> dict[str, object]:
        self._verb("set_clock", (node, offset_s))
        if self.clock != "faketime":
            raise RuntimeError(f"broker {node} reads the real clock")
        self.clocks[node] = offset_s
        if not offset_s:
            self.clocks.pop(node)
        took = 0 if node in self.clock_ignored else offset_s
        return {"asked_s": offset_s, "offset_s": took + 0.004, "rtt_ms": 3.0}

    def strobe_clock(
        self, node: int, offset_s: int, period_ms: int, duration_s: float
    ) -> dict[str, object]:
        self._verb("strobe_clock", (node, offset_s))
        self.clocks[node] = offset_s
        lo, hi = sorted((0, offset_s))
        return {"asked_s": offset_s, "period_ms": period_ms, "min_s": lo, "max_s": hi}

    def fill_disk(self, node: int) -> None:
        self._verb("fill_disk", node)
        if self.storage != "writeback":
            raise RuntimeError(f"broker {node} has no write-back filesystem")
        self.full.add(node)

    def free_disk(self, node: int) -> dict[str, object]:
        self._verb("free_disk", node)
        self.full.discard(node)
        halted = self.state[node] == "exited"
        self.state[node] = "running"
        return {"refused_writes": 3, "refused_bytes": 0, "halted": halted}

    # --- links --------------------------------------------------------------------

    def cut(
        self, link: LinkId, mode: CutMode = "drop", streams: tuple[Stream, ...] = BOTH_STREAMS
    ) -> None:
        self._verb("cut", link)
        # Like Toxiproxy: cutting one direction, then the other, cuts both.
        _, before = self.cuts.get(link, (mode, ()))
        self.cuts[link] = (mode, tuple(sorted({*before, *streams})))

    def uncut(self, link: LinkId) -> None:
        self._verb("uncut", link)
        self.cuts.pop(link, None)

    def add_toxic(self, link: LinkId, toxic: Toxic) -> None:
        self._verb("add_toxic", link)
        self.toxics.setdefault(link, {})[toxic.name] = toxic

    def remove_toxic(self, link: LinkId, name: str) -> None:
        self._verb("remove_toxic", link)
        self.toxics.get(link, {}).pop(name, None)

    def elect_leader(self, topic: str, partition: int, unclean: bool) -> None:
        self._verb("elect_leader", (topic, partition, unclean))
        live = self._live()
        if live:
            self.leaders[partition] = live[0]

    def add_packet_fault(
        self,
        node: int,
        kind: str,
        probability: float,
        kbit: int,
        delay_ms: int = 20,
        seed: int = 0,
        peer: int | None = None,
    ) -> dict:
        if peer is None:
            self._verb("add_packet_fault", (node, kind))
        else:
            self._verb("add_packet_fault", (node, kind, peer))
            if peer == node or peer not in self.node_ids:
                raise ValueError(f"broker {peer} is not a peer of broker {node}")
        self.packet_faults[node] = kind
        made = {"rules": 1, "kind": kind, "probability": probability}
        if peer is None:
            return made
        # As the namespace's iptables -S shows a rule aimed at one address.
        to = f"10.0.0.{peer}"
        self.packet_links[node] = peer
        return made | {"dst": to, "read_back": [f"-A KT-TRIAL -d {to}/32 -o eth0"]}

    def clear_packet_faults(self, node: int) -> dict:
        self._verb("clear_packet_faults", node)
        self.packet_faults.pop(node, None)
        self.packet_links.pop(node, None)
        return {"matched_packets": 7}

    def reassign(self, topic: str, partition: int, replicas: list[int]) -> None:
        self._verb("reassign", (topic, partition, tuple(replicas)))
        self.assignments[partition] = tuple(replicas)

    def reassignments(self, topic: str) -> dict[int, dict[str, list[int]]]:
        return {}

    def set_throttle(
        self, topic: str, rate: int, brokers: list[int], leader: str, follower: str
    ) -> None:
        self._verb("set_throttle", (topic, rate, tuple(brokers), leader, follower))
        for b in brokers:
            if b not in self.throttle_ignored:
                self.throttles[str(b)] = {name: str(rate) for name in THROTTLE_RATES}
        self.throttles[topic] = dict(zip(THROTTLE_REPLICAS, (leader, follower), strict=True))

    def clear_throttle(self, topic: str, brokers: list[int]) -> None:
        self._verb("clear_throttle", (topic, tuple(brokers)))
        if not self.sticky_throttle:
            for key in (topic, *map(str, brokers)):
                self.throttles.pop(key, None)

    def throttle_configs(self, topic: str, brokers: list[int]) -> dict[str, dict[str, str]]:
        self.calls.append(("throttle_configs", (topic, tuple(brokers))))
        per_broker = {str(b): self.throttles[str(b)] for b in brokers if str(b) in self.throttles}
        return ({"brokers": per_broker} if per_broker else {}) | (
            {"topic": self.throttles[topic]} if topic in self.throttles else {}
        )

    # --- membership ---------------------------------------------------------------

    def quorum(self, within_s: float | None = None) -> Quorum:
        self.calls.append(("quorum", within_s))
        leader = self.controller if self.controller in self.voters else None
        observers = {n: f"dir-{n}" for n in self.node_ids if n not in self.voters}
        return Quorum(leader, dict(self.voters), observers)

    def remove_voter(self, node: int, directory_id: str) -> None:
        self._verb("remove_voter", (node, directory_id))
        if self.quorum_mode != "dynamic":
            raise Refused("cannot remove a voter: the quorum is static")
        if self.voters.get(node) != directory_id:
            raise RuntimeError(f"VoterNotFoundException: {node} {directory_id}")
        if not self.sticky_voters:
            del self.voters[node]
            if self.controller == node:  # the removed leader resigns
                self.controller = min(self.voters)

    def add_voter(self, node: int, timeout_s: float = 60) -> dict[str, object]:
        self._verb("add_voter", node)
        self.voters[node] = f"dir-{node}"
        return {"voter": node, "directory_id": f"dir-{node}", "voters": sorted(self.voters)}

    def placement(self) -> dict[str, dict[int, PartitionState]]:
        return {self.topic: self.partitions(self.topic)}

    def move_replicas(self, moves: dict[tuple[str, int], list[int]]) -> None:
        self._verb("move_replicas", dict(moves))
        if not self.stuck_moves:
            for (_, p), replicas in moves.items():
                self.assignments[p] = tuple(replicas)
                if self.leaders[p] not in replicas:
                    self.leaders[p] = replicas[0]

    def registered_brokers(self) -> dict[int, bool | None]:
        return {n: self.state[n] != "running" for n in self.node_ids if n not in self.unregistered}

    def unregister_broker(self, node: int) -> None:
        self._verb("unregister_broker", node)
        if not self.sticky_registration:
            self.unregistered.add(node)

    def add_broker(
        self, node: int, replicas: dict[tuple[str, int], list[int]], timeout_s: float = 120
    ) -> dict[str, object]:
        self._verb("add_broker", (node, dict(replicas)))
        self.wiped.append(node)
        self.state[node] = "running"
        self.unregistered.discard(node)
        for (_, p), back in replicas.items():
            self.assignments[p] = tuple(back)
        return {
            "broker": node,
            "registered_after_s": 0.1,
            "restored": len(replicas),
            "in_sync": True,
        }

    def heal_all(self) -> None:
        self._verb("heal_all", None)
        self.cuts.clear()
        self.toxics.clear()
        self.full.clear()
        self.clocks.clear()
        for n in self.node_ids:
            self.state[n] = "running"
        # A restarted broker registers again, and (a dynamic quorum) every node is a
        # voter again, as the Docker kind's heal-all makes them.
        self.unregistered.clear()
        if self.quorum_mode == "dynamic":
            self.voters = {n: f"dir-{n}" for n in self.node_ids}
