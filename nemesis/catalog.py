"""The one registry of the nemesis vocabulary: fault packages, target roles, partition
topologies and toxics.

Spec validation, the CLI's help and the README's fault table all read it; each fault
package is one `PackageInfo`, and the tables below are views of them. The builders in
`packages.py` must cover exactly these names (checked at import).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_trial.cluster.netfaults import PACKET_TOXICS, STREAM_TOXICS
from kafka_trial.contracts.ops import TXN_FENCE_OP
from kafka_trial.contracts.spec.nemesis import PARTITION_TOPOLOGIES, TARGET_ROLES

# The packages that act on the run's transactional clients (nemesis/hijack.py).
TXN_PACKAGES = ("hijack-txn", "fence-txn-id")


@dataclass(frozen=True)
class PackageInfo:
    """One fault package: what it does and what undoes it, in words (the README's
    fault table); the ops it records; and what a cluster needs to have it done.
    Its builder is `packages.BUILDERS[name]`: the builders need the settings model,
    which validates names against this module, so they cannot live here."""

    name: str
    fault: str  # what the fault does, in one line
    heal: str  # what undoes it
    # The f of the op that records the fault, and of the op that heals it (None: the
    # fault is over when its op completes). Packages share ops: kill-leader records kill.
    fault_op: str
    heal_op: str | None
    # The other fault ops a sequence of steps records, each with its heal's f.
    steps: tuple[tuple[str, str | None], ...] = ()
    # The f of a heal the fault leaves only when it stopped short with something still
    # in force (reassign's throttle, set for a move that was then refused): a heal, but
    # not the fault op's own, so it ends no fault's band (heal-all ends that one).
    leftover_heal: str | None = None
    # The brokers' storage the fault acts on: "writeback" needs kt-lazyfs under the
    # data directory (cluster.storage), which a plain volume has not.
    storage: str = "plain"
    # The brokers' clock the fault acts on: "faketime" needs libfaketime in the JVM
    # (cluster.clock), which a real clock has not.
    clock: str = "real"
    # The controller quorum the fault acts on: "dynamic" changes the voter set, which
    # only KIP-853's quorum (cluster.quorum) can; a static one has a fixed set.
    quorum: str = "static"
    # Why only the Docker kind can have it done: its own machinery (kt-lazyfs, its
    # volumes, its proxies) makes the fault, and nothing on a user's node or behind a
    # bare address stands in for it. None: any kind kafka-trial faults.
    docker_only: str | None = None
    # It acts on the harness's own processes, so any kind, an observed cluster's too.
    harness_side: bool = False

    @property
    def ops(self) -> tuple[tuple[str, str | None], ...]:
        """Every fault op it records, with the f of the op that heals it."""
        return ((self.fault_op, self.heal_op), *self.steps)


_INFOS = (
    PackageInfo("kill", "SIGKILL the targeted brokers", "start", fault_op="kill", heal_op="start"),
    PackageInfo("stop", "SIGTERM the targeted brokers", "start", fault_op="stop", heal_op="start"),
    PackageInfo(
        "pause", "cgroup-freeze the targeted brokers", "resume", fault_op="pause", heal_op="resume"
    ),
    PackageInfo(
        "bounce",
        "kill and restart the targeted brokers at once",
        "(none)",
        fault_op="bounce",
        heal_op=None,
    ),
    PackageInfo(
        "partition",
        "cut replication and quorum links along a topology (`nemesis.topologies`), "
        "in `nemesis.partition_mode` drop (black hole) or reject (refused)",
        "restore the links",
        fault_op="partition",
        heal_op="heal",
    ),
    PackageInfo(
        "client-partition",
        "cut host clients off the targeted brokers: all clients, or one client's lane "
        "(`nemesis.client_scope: one` with `cluster.client_lanes` > 1)",
        "restore",
        fault_op="client-partition",
        heal_op="client-heal",
    ),
    PackageInfo(
        "client-pause",
        "freeze one client process (SIGSTOP) as a GC pause would, for `nemesis.fault_s`: "
        "clients in processes of their own (`producer.own_process`); the completion "
        "gives the kernel's state of it",
        "resume it (SIGCONT)",
        fault_op="client-pause",
        heal_op="client-resume",
        harness_side=True,
    ),
    # A client of the harness against the run's own transactional clients: any kind
    # that runs them, an observed cluster's too.
    PackageInfo(
        "hijack-txn",
        "a second producer takes over a running transactional producer's or copier's "
        "`transactional.id` (the pick's choice), as Redpanda's hijack_tx_ids does: its "
        "init_transactions bumps the epoch and fences the live one; `info` if it did not "
        "return",
        "none: the hijacker closes within the op, and the fenced client starts a new producer",
        fault_op=TXN_FENCE_OP,
        heal_op=None,
        harness_side=True,
    ),
    # The same package under the name the fault was first asked for: one op f
    # (`hijack-txn`) under both names, as kill-leader records kill, so a history's
    # readers know one f.
    PackageInfo(
        "fence-txn-id",
        "`hijack-txn` under its other name: the same takeover, recorded as the op `hijack-txn`",
        "none, as `hijack-txn`",
        fault_op=TXN_FENCE_OP,
        heal_op=None,
        harness_side=True,
    ),
    PackageInfo(
        "degrade",
        "add a toxic (`nemesis.degrade`) to the targeted brokers' client links",
        "remove it",
        fault_op="degrade",
        heal_op="restore",
    ),
    PackageInfo(
        "slow-follower",
        "the same toxic on one follower's fetch link to the leader (claim C15)",
        "remove it",
        fault_op="degrade",
        heal_op="restore",
    ),
    PackageInfo(
        "wipe",
        "SIGKILL the targeted brokers, empty their data directory, start them with "
        "fresh storage (KIP-903 class)",
        "(the restart is the heal)",
        fault_op="wipe",
        heal_op=None,
        docker_only="re-formats the broker's storage with the Docker kind's cluster id",
    ),
    PackageInfo(
        "power-loss",
        "SIGKILL the targeted brokers at once and drop every write they had not "
        "fsynced, as a power failure of their hosts would (claim C14; needs "
        "`cluster.storage: writeback`)",
        "start them on what was fsynced",
        fault_op="power-loss",
        heal_op="start",
        storage="writeback",
        docker_only="needs the write-back filesystem (kt-lazyfs) under the data directory",
    ),
    PackageInfo(
        "disk-full",
        "every write to the targeted brokers' data directory fails with ENOSPC (a full "
        "disk; needs `cluster.storage: writeback`); a broker whose only log directory "
        "fails halts",
        "writes succeed again; a halted broker is started",
        fault_op="disk-full",
        heal_op="disk-free",
        storage="writeback",
    ),
    PackageInfo(
        "corrupt",
        "kill the targeted brokers, flip bits in or truncate the tail of their active "
        "segment of `nemesis.target_partition` (`nemesis.corrupt_modes`), start them",
        "(the restart is the heal; the broker recovers from the damaged log)",
        fault_op="corrupt",
        heal_op=None,
        docker_only="edits a stopped broker's segment in its Docker volume",
    ),
    PackageInfo(
        "clock",
        "offset the targeted brokers' wall clocks by `nemesis.clock.offsets_s` in turn, "
        "or strobe them between that and true (`nemesis.clock.strobe_ms`); needs "
        "`cluster.clock: faketime`",
        "the true clock again",
        fault_op="clock",
        heal_op="clock-reset",
        clock="faketime",
    ),
    PackageInfo(
        "kill-leader",
        "SIGKILL the leader of `nemesis.target_partition`",
        "start",
        fault_op="kill",
        heal_op="start",
    ),
    PackageInfo(
        "isolate-broker",
        "`partition` with `isolate-random` only",
        "restore",
        fault_op="partition",
        heal_op="heal",
    ),
    # The sequences (failover.py): the leader's kill or power loss is what the heal
    # undoes; the links their first step cut are healed by a later step.
    PackageInfo(
        "packet",
        "lose, duplicate, reorder (hold back `nemesis.packet.delay_ms`) or corrupt (one bit "
        "of the TCP payload, checksum made valid) a share (`nemesis.packet.probability`) of "
        "the packets the targeted brokers send, or rate-limit them (`nemesis.packet.kbit`), "
        "all of them or (`nemesis.packet.scope: link`) only those each sends to one peer "
        "broker, the pick's choice: iptables rules, a tbf qdisc (on one link an htb class "
        "and a u32 filter) or an NFQUEUE helper in each one's network namespace",
        "remove them and stop the helper; the heal records how many packets they matched "
        "and what the helper did",
        fault_op="packet",
        heal_op="packet-heal",
        docker_only="on cluster.kind ssh, `degrade` with `nemesis.degrade.type` loss, "
        "duplicate, reorder, corrupt or bandwidth makes these on the node's own kernel",
    ),
    # Reconfiguration as operators do it (nemesis/reconfigure.py): nothing to heal, each
    # step leaves the cluster whole or completes `info`; a reassignment's heal waits for
    # the move it started, so what follows it in the schedule runs during the move.
    PackageInfo(
        "rolling-restart",
        "stop (SIGTERM: a controlled shutdown) and start each broker in turn, the next "
        "once every partition of the run's topic is back in sync",
        "none: each broker starts again in its own step",
        fault_op="restart",
        heal_op=None,
    ),
    PackageInfo(
        "preferred-election",
        "elect each partition's preferred (first) replica leader where another broker "
        "leads; `info` where no leader moved",
        "none: leadership stays where the election put it",
        fault_op="elect-preferred",
        heal_op=None,
    ),
    PackageInfo(
        "reassign",
        "move `nemesis.target_partition`'s replicas while clients write: one to a broker "
        "that held none where there is one, else a new replica order (a new preferred "
        "leader); the op completes once the controller shows the move going (or done), "
        "so the faults after it run while it moves; with `nemesis.reassign.throttle_bytes`, "
        "under a replication throttle as `kafka-reassign-partitions.sh --throttle` sets "
        "one, read back before the move",
        "wait for the move to be done (`info` with where it stopped if not in time; left "
        "to finish), then remove the throttle, read back gone; a throttle set for a move "
        "never asked for is removed (`unthrottle`)",
        fault_op="reassign",
        heal_op="reassign-settle",
        leftover_heal="unthrottle",
    ),
    # Membership as operators change it (nemesis/membership.py): each heal is verified
    # by reading the cluster back, and a heal-all adds every voter back.
    PackageInfo(
        "voter-change",
        "remove a controller from the KRaft voter set (the quorum leader or another "
        "voter, by the pick; needs `cluster.quorum: dynamic`): it keeps running as an "
        "observer; the voter sets before and after are recorded, `info` if the quorum "
        "still lists it",
        "add it back by its directory id, verified a voter again",
        fault_op="voter-remove",
        heal_op="voter-add",
        quorum="dynamic",
        docker_only="changes the voter set through kafka-trial's Java admin tool, with "
        "the directory ids the Docker kind formatted the nodes' storage with",
    ),
    PackageInfo(
        "remove-broker",
        "decommission a broker: every replica it holds moved off (to a broker holding "
        "none of that partition, else dropped), stopped, unregistered, verified gone "
        "from the registered brokers and holding no replica; what moved where recorded",
        "a fresh broker with its id (empty storage, formatted again), verified "
        "registered, and the replicas moved back",
        fault_op="remove-broker",
        heal_op="add-broker",
        docker_only="empties and formats the broker's Docker volume for the fresh node",
    ),
    PackageInfo(
        "unclean-failover",
        "claims C2/C5 as one sequence: cut the followers' fetch links, wait for ISR = "
        "{leader}, keep writing, kill the leader, elect a follower uncleanly",
        "start the old leader",
        fault_op="kill",
        heal_op="start",
        steps=(("partition", "heal"), ("elect-unclean", None)),
    ),
    PackageInfo(
        "last-replica-power-loss",
        "KIP-966's last replica standing: cut the followers' fetch links, wait for ISR = "
        "{leader}, power-loss the leader, restore the links, record who leads within "
        "`nemesis.fault_s` (needs `cluster.storage: writeback`)",
        "start the old leader",
        fault_op="power-loss",
        heal_op="start",
        steps=(("partition", "heal"),),
        storage="writeback",
        docker_only="needs the write-back filesystem (kt-lazyfs)",
    ),
    # The application on trial (`app.command` or `app.image`): each fault acts on one
    # of its running instances, the pick's choice, through contracts.app_contract.APPS.
    # Its supervisor starts a killed or stopped instance again: no heal op.
    PackageInfo(
        "app-kill",
        "SIGKILL one instance of the application on trial (its process group, or its "
        "container killed); its supervisor starts it again after `app.restart_delay_s`",
        "(the restart is the heal)",
        fault_op="app-kill",
        heal_op=None,
        harness_side=True,
    ),
    PackageInfo(
        "app-pause",
        "freeze one instance of the application (SIGSTOP of its process group, or "
        "`docker pause`) for `nemesis.fault_s`: longer than its session timeout, and "
        "its group moves on without it",
        "resume it (SIGCONT, or `docker unpause`)",
        fault_op="app-pause",
        heal_op="app-resume",
        harness_side=True,
    ),
    PackageInfo(
        "app-restart",
        "SIGTERM one instance of the application (`docker stop` of a container): a "
        "graceful stop; its supervisor starts it again after `app.restart_delay_s`",
        "(the restart is the heal)",
        fault_op="app-restart",
        heal_op=None,
        harness_side=True,
    ),
    PackageInfo(
        "app-partition",
        "cut one instance of the application off every broker: the Toxiproxy proxies of "
        "its client lane disabled",
        "enable them",
        fault_op="app-partition",
        heal_op="app-heal",
        docker_only="cuts an app instance's own client lane of Toxiproxy proxies",
    ),
)

PACKAGES: dict[str, PackageInfo] = {p.name: p for p in _INFOS}
if len(PACKAGES) != len(_INFOS):
    raise ImportError("two fault packages have one name")
# The packages that act on the application on trial: a run without one cannot use them.
APP_PACKAGES = frozenset(p for p in PACKAGES if p.startswith("app-"))

# What a cluster kafka-trial did not build cannot have done to it (PackageInfo.docker_only).
DOCKER_ONLY: dict[str, str] = {p.name: p.docker_only for p in _INFOS if p.docker_only}
# Faults on the harness's own processes: any kind, an observed cluster's too.
HARNESS_SIDE = frozenset(p.name for p in _INFOS if p.harness_side)


def kind_refusal(package: str, kind: str) -> str | None:
    """Why a cluster of `kind` cannot have `package` done to it, or None if it can."""
    if kind == "docker" or package in HARNESS_SIDE:
        return None
    if kind == "bootstrap":
        return "kafka-trial only observes a cluster of this kind and faults nothing of it"
    return DOCKER_ONLY.get(package)


# The spec's words for roles and topologies (its defaults need them below contracts).
ROLES = TARGET_ROLES
TOPOLOGIES = PARTITION_TOPOLOGIES
# The packages that aim at a role of `nemesis.targets` (their builders pass them on);
# the rest aim where their name says. `partition` aims through its topologies.
ROLE_PACKAGES = frozenset(
    {"kill", "stop", "pause", "bounce", "client-partition", "degrade", "wipe", "power-loss"}
    | {"disk-full", "clock", "corrupt", "packet"}
)
# The roles whose brokers coordinate ids the run's clients hold, by what they need.
COORDINATOR_ROLES = {"txn-coordinator": "transactional.id", "group-coordinator": "group.id"}

TOXICS = ("latency", "bandwidth", "slicer", "reset_peer", "limit_data", "slow_close", "timeout")


def toxic_refusal(toxic: str, kind: str) -> str | None:
    """Why `degrade`'s toxic cannot be made on a cluster of `kind`, or None: packet
    faults only a node's kernel makes, and Toxiproxy's stream toxics no kernel stands
    in for (cluster/netfaults.py owns both lists)."""
    if kind == "docker" and toxic in PACKET_TOXICS:
        return (
            f"{toxic} acts on packets, and Toxiproxy works on TCP streams; use the `packet` "
            f"package with nemesis.packet.kind {toxic} on this kind"
        )
    if kind == "ssh" and toxic in STREAM_TOXICS:
        return f"{toxic} is a Toxiproxy stream toxic, which a node's kernel cannot make"
    return None


def markdown_table() -> str:
    """The README's fault table, rendered from this registry."""
    rows = ["| package | fault | heal |", "|---|---|---|"]
    rows += [f"| `{p.name}` | {p.fault} | {p.heal} |" for p in _INFOS]
    return "\n".join(rows)


def _fault_ops() -> dict[str, str | None]:
    """Each fault op any package records -> the f of the op that heals it."""
    out: dict[str, str | None] = {}
    for p in _INFOS:
        for f, heal in p.ops:
            # The report pairs bands by f alone: one f with two heals could not be drawn.
            if out.setdefault(f, heal) != heal:
                raise ImportError(f"fault op {f} is healed by both {out[f]} and {heal} ({p.name})")
    return out


# The ops the nemesis records, by f, as the history shows them: a fault op -> the f
# of the op that heals it, or None for a fault that is over when its op completes
# (the packages' `ops`). Heals and waits are not faults (core.py, runner.py).
FAULT_OPS: dict[str, str | None] = _fault_ops()
# The heals the packages record, and the runner's heal-all, which ends every fault.
HEAL_OPS = frozenset(
    {h for h in FAULT_OPS.values() if h is not None}
    | {p.leftover_heal for p in _INFOS if p.leftover_heal is not None}
    | {"heal-all"}
)
WAIT_OPS = frozenset({"await-healthy", "await-isr-shrink", "await-leader"})
# Outside events the user marked during the run (`kafka-trial mark`, harness/marks.py):
# what they did to the cluster is not known, so they count as neither fault nor heal.
MARK_OPS = frozenset({"mark"})
# A fault of the schedule that the runner never started, because the fault phase
# ended first (what ran before it overran the phase): said, so that a run never
# seems to have had the faults it asked for; neither a fault nor a heal.
NOT_RUN_OP = "fault-not-run"
_NOT_FAULTS = HEAL_OPS | WAIT_OPS | MARK_OPS | {NOT_RUN_OP}
if set(FAULT_OPS) & _NOT_FAULTS:
    raise ImportError(f"ops both fault and not: {set(FAULT_OPS) & _NOT_FAULTS}")


def is_fault(f: str) -> bool:
    """A recorded op that hurts the cluster (an unknown f counts: better drawn than hidden)."""
    return f not in _NOT_FAULTS


def heals(fault: str, heal: str) -> bool:
    """Whether an op `heal` ends a fault op `fault`: its own heal, or heal-all."""
    return heal == "heal-all" or (FAULT_OPS.get(fault) is not None and FAULT_OPS[fault] == heal)


def is_instant(f: str) -> bool:
    return f in FAULT_OPS and FAULT_OPS[f] is None
