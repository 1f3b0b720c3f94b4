"""The Docker kind's membership verbs (control.MembershipControl): the controllers'
voter set (cluster.quorum dynamic, KIP-853) and the brokers' registrations, read and
changed through kafka-trial's Java admin tool. Every request goes to a broker, which
forwards it to the active controller: no controller listener is reachable from the
host, only through the nodes' own proxies."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_trial.cluster.admin_tool import AdminTool
from kafka_trial.cluster.brokers import Broker
from kafka_trial.cluster.control import PartitionState, Quorum, Refused
from kafka_trial.cluster.naming import CONTROLLER_PROXY_BASE
from kafka_trial.cluster.observe import Observer, partition_states
from kafka_trial.cluster.provision import DATA_DIR, Provisioner
from kafka_trial.cluster.settings import ClusterSpec

# How often a wait reads the cluster again: each read of the quorum or of the
# registrations starts a JVM (about a second of a core).
POLL_S = 1.0
# The least time a call through one broker is given, however little of a wait is
# left: the admin tool's JVM takes about a second to start on these machines.
MIN_CALL_S = 5.0


def _poll(cond: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if cond():
                return True
        except RuntimeError:  # the admin tool's answer: asked again until the deadline
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)


def _directory_id(meta_properties: str) -> str | None:
    for line in meta_properties.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "directory.id":
            return value.strip()
    return None


@dataclass
class DockerMembership:
    spec: ClusterSpec
    brokers: dict[int, Broker]
    provision: Provisioner
    observe: Observer
    bootstrap: Callable[[], str]
    tool: Callable[[], AdminTool]

    # The broker that answered last: asked first next time.
    _answered: str | None = None

    def _call(self, *args: str, within_s: float | None = None) -> dict[str, Any]:
        """The admin tool through one broker at a time, the one that answered last
        first. A broker cut off from the active controller forwards nothing, and an
        admin client given all of them picks one itself: under a partition the
        answer was a matter of that pick (a quorum read through the cut-off broker
        timed out, through another it came in 0.5 s). With `within_s`, no broker is
        asked once that has passed (each is given at least MIN_CALL_S): a wait
        bounded by a fault's settle time stays bounded by it when none answers.
        Raises with every broker's error if none answers."""
        servers = self.bootstrap().split(",")
        if self._answered in servers:
            servers.remove(self._answered)
            servers.insert(0, self._answered)
        deadline = None if within_s is None else time.monotonic() + within_s
        errors: list[str] = []
        for server in servers:
            left = 60.0 if deadline is None else deadline - time.monotonic()
            if errors and left <= 0:
                errors.append(f"not asked through {server} or later: out of time")
                break
            try:
                got = self.tool().call(server, *args, timeout_s=min(60.0, max(left, MIN_CALL_S)))
            except RuntimeError as e:
                errors.append(f"through {server}: {e}")
                continue
            self._answered = server
            return got
        raise RuntimeError("; ".join(errors))

    def quorum(self, within_s: float | None = None) -> Quorum:
        got = self._call("quorum", within_s=within_s)
        leader = int(got["leader"])
        hw = got.get("hw")
        return Quorum(
            leader if leader >= 0 else None,
            {int(k): str(v) for k, v in got["voters"].items()},
            {int(k): str(v) for k, v in got["observers"].items()},
            int(hw) if hw is not None and int(hw) >= 0 else None,
            {int(k): int(v) for k, v in got.get("ends", {}).items()},
        )

    def _dynamic(self, what: str) -> None:
        if self.spec.quorum != "dynamic":
            raise Refused(
                f"cannot {what}: cluster.quorum is static (controller.quorum.voters), whose "
                "voter set never changes; set cluster.quorum: dynamic"
            )

    def remove_voter(self, node: int, directory_id: str) -> None:
        self._dynamic("remove a voter")
        self._call("remove-voter", str(node), directory_id)

    def directory_id(self, node: int, formatted: bool = True) -> str:
        """The node's metadata log directory id, as its meta.properties says; where the
        broker cannot be asked (it is down), the one its storage was formatted with
        (`formatted`), else an error."""
        res = self.brokers[node].exec_running(["cat", f"{DATA_DIR}/meta.properties"])
        if res is not None:
            found = _directory_id(res.output.decode(errors="replace"))
            if res.exit_code == 0 and found:
                return found
        if not formatted:
            raise RuntimeError(f"node {node}'s meta.properties cannot be read: is it running?")
        return self.provision.directory_ids[node]

    def add_voter(self, node: int, timeout_s: float = 60) -> dict[str, Any]:
        """Asked again until the quorum lists the voter: the leader refuses one whose
        controller has not caught up yet, or while another change is in flight."""
        self._dynamic("add a voter")
        t0 = time.monotonic()
        directory = self.directory_id(node)
        endpoint = ("CONTROLLER", "127.0.0.1", str(CONTROLLER_PROXY_BASE + node))
        last = "not asked"

        def left() -> float:
            return timeout_s - (time.monotonic() - t0)

        while True:
            try:
                q = self.quorum(within_s=left())
                if q.voters.get(node) == directory:
                    return {
                        "voter": node,
                        "directory_id": directory,
                        "voters": sorted(q.voters),
                        "took_s": round(time.monotonic() - t0, 2),
                        **self._whole_log(timeout_s),
                    }
                self._call("add-voter", str(node), directory, *endpoint, within_s=left())
            except RuntimeError as e:
                last = str(e)
            if time.monotonic() - t0 > timeout_s:
                raise RuntimeError(
                    f"node {node} not a voter again {timeout_s:.0f} s on (last answer: {last})"
                )
            time.sleep(POLL_S)

    def _whole_log(self, timeout_s: float) -> dict[str, Any]:
        """Waits until every voter holds the metadata log up to the high watermark, as
        the leader last heard: what says the change kept the log whole. Raises if one
        has not within the timeout, with the offsets it showed."""
        t0 = time.monotonic()
        q = self.quorum()
        while not q.caught_up():
            if time.monotonic() - t0 > timeout_s:
                raise RuntimeError(
                    f"the voters' metadata logs did not reach the high watermark "
                    f"{q.high_watermark} within {timeout_s:.0f} s: log ends {q.log_ends}"
                )
            time.sleep(POLL_S)
            q = self.quorum()
        return {
            "high_watermark": q.high_watermark,
            "log_ends": {str(k): v for k, v in sorted(q.log_ends.items())},
            "caught_up_s": round(time.monotonic() - t0, 2),
        }

    def replace_voter(self, node: int, timeout_s: float) -> dict[str, Any]:
        """The node's new replica (its storage replaced) voting in its old one's place:
        the old directory id removed from the voter set, the new one added."""
        new = self.directory_id(node, formatted=False)
        old = self.quorum().voters.get(node)
        if old is not None and old != new:
            self._remove_until_gone(node, old, timeout_s)
        added = self.add_voter(node, timeout_s)
        self.provision.directory_ids[node] = new
        return {"voter": {"from": old, "to": new, "voters": added["voters"]}}

    def _remove_until_gone(self, node: int, directory: str, timeout_s: float) -> None:
        """Asked again until the voter is gone: a quorum whose leader just changed
        answers NotLeaderOrFollower for a while."""

        def gone() -> bool:
            if self.quorum().voters.get(node) != directory:
                return True
            self.remove_voter(node, directory)
            return False

        if not _poll(gone, timeout_s):
            raise RuntimeError(f"node {node}'s old replica {directory} still a voter")

    def restore_voters(self) -> list[int]:
        """Every node's controller a voter (a dynamic quorum): a heal-all's part, for a
        voter whose own heal never ran. Returns the nodes it added back."""
        if self.spec.quorum != "dynamic":
            return []
        missing = sorted(set(self.brokers) - set(self.quorum().voters))
        for node in missing:
            self.add_voter(node)
        return missing

    def placement(self) -> dict[str, dict[int, PartitionState]]:
        md = self.observe.metadata(None, 10)
        return {t: partition_states(md, t) for t in sorted(md.topics)}

    def move_replicas(self, moves: dict[tuple[str, int], list[int]]) -> None:
        if moves:
            spec = ";".join(
                f"{t}/{p}=" + ",".join(str(r) for r in replicas)
                for (t, p), replicas in sorted(moves.items())
            )
            self._call("move", spec)

    def registered_brokers(self) -> dict[int, bool | None]:
        return {int(k): v for k, v in self._call("brokers").items()}

    def unregister_broker(self, node: int) -> None:
        self._call("unregister", str(node))

    def _placed(self, replicas: dict[tuple[str, int], list[int]]) -> bool:
        now = self.placement()
        for (t, p), want in replicas.items():
            st = now.get(t, {}).get(p)
            if st is None or list(st.replicas) != want or set(st.isr) != set(want):
                return False
        return True

    def add_broker(
        self, node: int, replicas: dict[tuple[str, int], list[int]], timeout_s: float = 120
    ) -> dict[str, Any]:
        t0 = time.monotonic()
        dynamic = self.spec.quorum == "dynamic"
        # Empty storage, formatted again by the entrypoint: a fresh node with the old id.
        # In a dynamic quorum its controller is a new replica (a fresh directory id),
        # which takes the old one's place in the voter set below.
        self.provision.wipe(node, new_replica=dynamic)
        if not _poll(lambda: self.registered_brokers().get(node, True) is not True, timeout_s):
            raise RuntimeError(f"the fresh broker {node} did not register within {timeout_s:.0f} s")
        registered_s = round(time.monotonic() - t0, 2)
        voter = self.replace_voter(node, timeout_s) if dynamic else {}
        now = self.placement()
        back = {(t, p): r for (t, p), r in replicas.items() if p in now.get(t, {})}
        self.move_replicas(back)
        left = max(1.0, timeout_s - (time.monotonic() - t0))
        return {
            "broker": node,
            "registered_after_s": registered_s,
            **voter,
            "restored": len(back),
            "in_sync": _poll(lambda: self._placed(back), left),
            "took_s": round(time.monotonic() - t0, 2),
        }
