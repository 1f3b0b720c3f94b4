"""Each fault package is one `catalog.PackageInfo`, with one builder in
`packages.BUILDERS`; the catalog's tables are derived from the entries. These
literals are the tables as they were before the entries carried them, so a derived
table that gained, lost or changed a row is caught here."""

from __future__ import annotations

import pytest
from kafka_trial.nemesis import catalog, packages
from kafka_trial.nemesis.catalog import (
    APP_PACKAGES,
    DOCKER_ONLY,
    FAULT_OPS,
    HARNESS_SIDE,
    HEAL_OPS,
    MARK_OPS,
    PACKAGES,
    WAIT_OPS,
    PackageInfo,
    kind_refusal,
    markdown_table,
)
from kafka_trial.nemesis.settings import NemesisSpec

KINDS = ("docker", "ssh", "bootstrap", "k8s")


def test_packages_are_what_they_were() -> None:
    got = {k: (p.name, p.fault, p.heal, p.storage, p.clock) for k, p in PACKAGES.items()}
    assert got == EXPECTED_PACKAGES
    assert list(PACKAGES) == list(EXPECTED_PACKAGES)  # the CLI's and errors' order
    assert markdown_table() == EXPECTED_FAULT_TABLE
    assert sorted(APP_PACKAGES) == EXPECTED_APP_PACKAGES


def test_op_tables_are_what_they_were() -> None:
    assert FAULT_OPS == EXPECTED_FAULT_OPS
    assert sorted(HEAL_OPS) == EXPECTED_HEAL_OPS
    assert sorted(WAIT_OPS) == EXPECTED_WAIT_OPS
    assert sorted(MARK_OPS) == EXPECTED_MARK_OPS


def test_what_a_kind_cannot_have_done_is_what_it_was() -> None:
    assert DOCKER_ONLY == EXPECTED_DOCKER_ONLY
    assert sorted(HARNESS_SIDE) == EXPECTED_HARNESS_SIDE
    got = {p: {k: kind_refusal(p, k) for k in KINDS} for p in PACKAGES}
    assert got == EXPECTED_REFUSALS


def test_every_entry_has_exactly_one_builder_that_builds_it() -> None:
    assert list(packages.BUILDERS) == EXPECTED_BUILDERS_ORDER
    assert set(packages.BUILDERS) == set(PACKAGES)
    spec = NemesisSpec()
    for name, build in packages.BUILDERS.items():
        built = build(spec, "trial")
        assert built.name == PACKAGES[name].name
        assert repr(built) == EXPECTED_BUILT[name], name


def test_every_op_of_an_entry_is_in_the_tables_with_its_heal() -> None:
    for p in PACKAGES.values():
        for f, heal in p.ops:
            assert FAULT_OPS[f] == heal, (p.name, f)
            assert heal is None or heal in HEAL_OPS
    assert {f for p in PACKAGES.values() for f, _ in p.ops} == set(FAULT_OPS)


def test_two_heals_for_one_fault_op_are_refused(monkeypatch) -> None:
    clash = PackageInfo("kill-twice", "", "", fault_op="kill", heal_op="resume")
    monkeypatch.setattr(catalog, "_INFOS", (*catalog._INFOS, clash))
    with pytest.raises(ImportError, match="fault op kill is healed by both start and resume"):
        catalog._fault_ops()


EXPECTED_PACKAGES = {
    "kill": ("kill", "SIGKILL the targeted brokers", "start", "plain", "real"),
    "stop": ("stop", "SIGTERM the targeted brokers", "start", "plain", "real"),
    "pause": ("pause", "cgroup-freeze the targeted brokers", "resume", "plain", "real"),
    "bounce": (
        "bounce",
        "kill and restart the targeted brokers at once",
        "(none)",
        "plain",
        "real",
    ),
    "partition": (
        "partition",
        "cut replication and quorum links along a topology (`nemesis.topologies`), in "
        "`nemesis.partition_mode` drop (black hole) or reject (refused)",
        "restore the links",
        "plain",
        "real",
    ),
    "client-partition": (
        "client-partition",
        "cut host clients off the targeted brokers: all clients, or one "
        "client's lane (`nemesis.client_scope: one` with `cluster.client_lanes` "
        "> 1)",
        "restore",
        "plain",
        "real",
    ),
    "client-pause": (
        "client-pause",
        "freeze one client process (SIGSTOP) as a GC pause would, for "
        "`nemesis.fault_s`: clients in processes of their own "
        "(`producer.own_process`); the completion gives the kernel's state of it",
        "resume it (SIGCONT)",
        "plain",
        "real",
    ),
    "hijack-txn": (
        "hijack-txn",
        "a second producer takes over a running transactional producer's or copier's "
        "`transactional.id` (the pick's choice), as Redpanda's hijack_tx_ids does: its "
        "init_transactions bumps the epoch and fences the live one; `info` if it did not "
        "return",
        "none: the hijacker closes within the op, and the fenced client starts a new producer",
        "plain",
        "real",
    ),
    "fence-txn-id": (
        "fence-txn-id",
        "`hijack-txn` under its other name: the same takeover, recorded as the op `hijack-txn`",
        "none, as `hijack-txn`",
        "plain",
        "real",
    ),
    "degrade": (
        "degrade",
        "add a toxic (`nemesis.degrade`) to the targeted brokers' client links",
        "remove it",
        "plain",
        "real",
    ),
    "slow-follower": (
        "slow-follower",
        "the same toxic on one follower's fetch link to the leader (claim C15)",
        "remove it",
        "plain",
        "real",
    ),
    "wipe": (
        "wipe",
        "SIGKILL the targeted brokers, empty their data directory, start them with fresh "
        "storage (KIP-903 class)",
        "(the restart is the heal)",
        "plain",
        "real",
    ),
    "power-loss": (
        "power-loss",
        "SIGKILL the targeted brokers at once and drop every write they had not "
        "fsynced, as a power failure of their hosts would (claim C14; needs "
        "`cluster.storage: writeback`)",
        "start them on what was fsynced",
        "writeback",
        "real",
    ),
    "disk-full": (
        "disk-full",
        "every write to the targeted brokers' data directory fails with ENOSPC (a full "
        "disk; needs `cluster.storage: writeback`); a broker whose only log directory "
        "fails halts",
        "writes succeed again; a halted broker is started",
        "writeback",
        "real",
    ),
    "corrupt": (
        "corrupt",
        "kill the targeted brokers, flip bits in or truncate the tail of their active "
        "segment of `nemesis.target_partition` (`nemesis.corrupt_modes`), start them",
        "(the restart is the heal; the broker recovers from the damaged log)",
        "plain",
        "real",
    ),
    "clock": (
        "clock",
        "offset the targeted brokers' wall clocks by `nemesis.clock.offsets_s` in turn, or "
        "strobe them between that and true (`nemesis.clock.strobe_ms`); needs "
        "`cluster.clock: faketime`",
        "the true clock again",
        "plain",
        "faketime",
    ),
    "kill-leader": (
        "kill-leader",
        "SIGKILL the leader of `nemesis.target_partition`",
        "start",
        "plain",
        "real",
    ),
    "isolate-broker": (
        "isolate-broker",
        "`partition` with `isolate-random` only",
        "restore",
        "plain",
        "real",
    ),
    "packet": (
        "packet",
        "lose, duplicate, reorder (hold back `nemesis.packet.delay_ms`) or corrupt (one bit of "
        "the TCP payload, checksum made valid) a share (`nemesis.packet.probability`) of the "
        "packets the targeted brokers send, or rate-limit them (`nemesis.packet.kbit`), all of "
        "them or (`nemesis.packet.scope: link`) only those each sends to one peer broker, the "
        "pick's choice: iptables rules, a tbf qdisc (on one link an htb class and a u32 filter) "
        "or an NFQUEUE helper in each one's network namespace",
        "remove them and stop the helper; the heal records how many packets they matched and "
        "what the helper did",
        "plain",
        "real",
    ),
    "rolling-restart": (
        "rolling-restart",
        "stop (SIGTERM: a controlled shutdown) and start each broker in turn, the next once "
        "every partition of the run's topic is back in sync",
        "none: each broker starts again in its own step",
        "plain",
        "real",
    ),
    "preferred-election": (
        "preferred-election",
        "elect each partition's preferred (first) replica leader where another broker leads; "
        "`info` where no leader moved",
        "none: leadership stays where the election put it",
        "plain",
        "real",
    ),
    "reassign": (
        "reassign",
        "move `nemesis.target_partition`'s replicas while clients write: one to a broker that "
        "held none where there is one, else a new replica order (a new preferred leader); "
        "the op completes once the controller shows the move going (or done), so the faults "
        "after it run while it moves; with `nemesis.reassign.throttle_bytes`, under a "
        "replication throttle as `kafka-reassign-partitions.sh --throttle` sets one, read "
        "back before the move",
        "wait for the move to be done (`info` with where it stopped if not in time; left to "
        "finish), then remove the throttle, read back gone; a throttle set for a move never "
        "asked for is removed (`unthrottle`)",
        "plain",
        "real",
    ),
    "voter-change": (
        "voter-change",
        "remove a controller from the KRaft voter set (the quorum leader or another voter, by the "
        "pick; needs `cluster.quorum: dynamic`): it keeps running as an observer; the voter "
        "sets before and after are recorded, `info` if the quorum still lists it",
        "add it back by its directory id, verified a voter again",
        "plain",
        "real",
    ),
    "remove-broker": (
        "remove-broker",
        "decommission a broker: every replica it holds moved off (to a broker holding none of "
        "that partition, else dropped), stopped, unregistered, verified gone from the "
        "registered brokers and holding no replica; what moved where recorded",
        "a fresh broker with its id (empty storage, formatted again), verified registered, and "
        "the replicas moved back",
        "plain",
        "real",
    ),
    "unclean-failover": (
        "unclean-failover",
        "claims C2/C5 as one sequence: cut the followers' fetch links, wait for "
        "ISR = {leader}, keep writing, kill the leader, elect a follower "
        "uncleanly",
        "start the old leader",
        "plain",
        "real",
    ),
    "last-replica-power-loss": (
        "last-replica-power-loss",
        "KIP-966's last replica standing: cut the followers' fetch "
        "links, wait for ISR = {leader}, power-loss the leader, restore "
        "the links, record who leads within `nemesis.fault_s` (needs "
        "`cluster.storage: writeback`)",
        "start the old leader",
        "writeback",
        "real",
    ),
    "app-kill": (
        "app-kill",
        "SIGKILL one instance of the application on trial (its process group, or its "
        "container killed); its supervisor starts it again after `app.restart_delay_s`",
        "(the restart is the heal)",
        "plain",
        "real",
    ),
    "app-pause": (
        "app-pause",
        "freeze one instance of the application (SIGSTOP of its process group, or "
        "`docker pause`) for `nemesis.fault_s`: longer than its session timeout, and "
        "its group moves on without it",
        "resume it (SIGCONT, or `docker unpause`)",
        "plain",
        "real",
    ),
    "app-restart": (
        "app-restart",
        "SIGTERM one instance of the application (`docker stop` of a container): a "
        "graceful stop; its supervisor starts it again after `app.restart_delay_s`",
        "(the restart is the heal)",
        "plain",
        "real",
    ),
    "app-partition": (
        "app-partition",
        "cut one instance of the application off every broker: the Toxiproxy "
        "proxies of its client lane disabled",
        "enable them",
        "plain",
        "real",
    ),
}

EXPECTED_APP_PACKAGES = ["app-kill", "app-partition", "app-pause", "app-restart"]

EXPECTED_DOCKER_ONLY = {
    "power-loss": "needs the write-back filesystem (kt-lazyfs) under the data directory",
    "last-replica-power-loss": "needs the write-back filesystem (kt-lazyfs)",
    "wipe": "re-formats the broker's storage with the Docker kind's cluster id",
    "corrupt": "edits a stopped broker's segment in its Docker volume",
    "app-partition": "cuts an app instance's own client lane of Toxiproxy proxies",
    "packet": "on cluster.kind ssh, `degrade` with `nemesis.degrade.type` loss, duplicate, "
    "reorder, corrupt or bandwidth makes these on the node's own kernel",
    "voter-change": "changes the voter set through kafka-trial's Java admin tool, with the "
    "directory ids the Docker kind formatted the nodes' storage with",
    "remove-broker": "empties and formats the broker's Docker volume for the fresh node",
}

EXPECTED_HARNESS_SIDE = [
    "app-kill",
    "app-pause",
    "app-restart",
    "client-pause",
    "fence-txn-id",
    "hijack-txn",
]

EXPECTED_FAULT_OPS = {
    "kill": "start",
    "stop": "start",
    "pause": "resume",
    "partition": "heal",
    "client-partition": "client-heal",
    "client-pause": "client-resume",
    "hijack-txn": None,
    "degrade": "restore",
    "bounce": None,
    "wipe": None,
    "corrupt": None,
    "power-loss": "start",
    "disk-full": "disk-free",
    "clock": "clock-reset",
    "packet": "packet-heal",
    "restart": None,
    "elect-preferred": None,
    "reassign": "reassign-settle",
    "voter-remove": "voter-add",
    "remove-broker": "add-broker",
    "elect-unclean": None,
    "app-kill": None,
    "app-restart": None,
    "app-pause": "app-resume",
    "app-partition": "app-heal",
}

EXPECTED_HEAL_OPS = [
    "add-broker",
    "app-heal",
    "app-resume",
    "client-heal",
    "client-resume",
    "clock-reset",
    "disk-free",
    "heal",
    "heal-all",
    "packet-heal",
    "reassign-settle",
    "restore",
    "resume",
    "start",
    "unthrottle",
    "voter-add",
]

EXPECTED_WAIT_OPS = ["await-healthy", "await-isr-shrink", "await-leader"]

EXPECTED_MARK_OPS = ["mark"]

EXPECTED_FAULT_TABLE = (
    "| package | fault | heal |\n"
    "|---|---|---|\n"
    "| `kill` | SIGKILL the targeted brokers | start |\n"
    "| `stop` | SIGTERM the targeted brokers | start |\n"
    "| `pause` | cgroup-freeze the targeted brokers | resume |\n"
    "| `bounce` | kill and restart the targeted brokers at once | (none) |\n"
    "| `partition` | cut replication and quorum links along a topology (`nemesis.topologies`), "
    "in `nemesis.partition_mode` drop (black hole) or reject (refused) | restore the links |\n"
    "| `client-partition` | cut host clients off the targeted brokers: all clients, or one "
    "client's lane (`nemesis.client_scope: one` with `cluster.client_lanes` > 1) | restore |\n"
    "| `client-pause` | freeze one client process (SIGSTOP) as a GC pause would, for "
    "`nemesis.fault_s`: clients in processes of their own (`producer.own_process`); the "
    "completion gives the kernel's state of it | resume it (SIGCONT) |\n"
    "| `hijack-txn` | a second producer takes over a running transactional producer's or "
    "copier's `transactional.id` (the pick's choice), as Redpanda's hijack_tx_ids does: its "
    "init_transactions bumps the epoch and fences the live one; `info` if it did not return | "
    "none: the hijacker closes within the op, and the fenced client starts a new producer |\n"
    "| `fence-txn-id` | `hijack-txn` under its other name: the same takeover, recorded as the "
    "op `hijack-txn` | none, as `hijack-txn` |\n"
    "| `degrade` | add a toxic (`nemesis.degrade`) to the targeted brokers' client links | "
    "remove it |\n"
    "| `slow-follower` | the same toxic on one follower's fetch link to the leader (claim C15) | "
    "remove it |\n"
    "| `wipe` | SIGKILL the targeted brokers, empty their data directory, start them with fresh "
    "storage (KIP-903 class) | (the restart is the heal) |\n"
    "| `power-loss` | SIGKILL the targeted brokers at once and drop every write they had not "
    "fsynced, as a power failure of their hosts would (claim C14; needs `cluster.storage: "
    "writeback`) | start them on what was fsynced |\n"
    "| `disk-full` | every write to the targeted brokers' data directory fails with ENOSPC (a "
    "full disk; needs `cluster.storage: writeback`); a broker whose only log directory fails "
    "halts | writes succeed again; a halted broker is started |\n"
    "| `corrupt` | kill the targeted brokers, flip bits in or truncate the tail of their active "
    "segment of `nemesis.target_partition` (`nemesis.corrupt_modes`), start them | (the restart "
    "is the heal; the broker recovers from the damaged log) |\n"
    "| `clock` | offset the targeted brokers' wall clocks by `nemesis.clock.offsets_s` in turn, "
    "or strobe them between that and true (`nemesis.clock.strobe_ms`); needs `cluster.clock: "
    "faketime` | the true clock again |\n"
    "| `kill-leader` | SIGKILL the leader of `nemesis.target_partition` | start |\n"
    "| `isolate-broker` | `partition` with `isolate-random` only | restore |\n"
    "| `packet` | lose, duplicate, reorder (hold back `nemesis.packet.delay_ms`) or corrupt (one "
    "bit of the TCP payload, checksum made valid) a share (`nemesis.packet.probability`) of the "
    "packets the targeted brokers send, or rate-limit them (`nemesis.packet.kbit`), all of them "
    "or (`nemesis.packet.scope: link`) only those each sends to one peer broker, the pick's "
    "choice: iptables rules, a tbf qdisc (on one link an htb class and a u32 filter) or an "
    "NFQUEUE helper in each one's network namespace | remove them and stop the helper; the heal "
    "records how many packets they matched and what the helper did |\n"
    "| `rolling-restart` | stop (SIGTERM: a controlled shutdown) and start each broker in turn, "
    "the next once every partition of the run's topic is back in sync | none: each broker starts "
    "again in its own step |\n"
    "| `preferred-election` | elect each partition's preferred (first) replica leader where "
    "another broker leads; `info` where no leader moved | none: leadership stays where the "
    "election put it |\n"
    "| `reassign` | move `nemesis.target_partition`'s replicas while clients write: one to a "
    "broker that held none where there is one, else a new replica order (a new preferred "
    "leader); the op completes once the controller shows the move going (or done), so the "
    "faults after it run while it moves; with `nemesis.reassign.throttle_bytes`, under a "
    "replication throttle as `kafka-reassign-partitions.sh --throttle` sets one, read back "
    "before the move | wait for the move to be done (`info` with where it stopped if not in "
    "time; left to finish), then remove the throttle, read back gone; a throttle set for a "
    "move never asked for is removed (`unthrottle`) |\n"
    "| `voter-change` | remove a controller from the KRaft voter set (the quorum leader or "
    "another voter, by the pick; needs `cluster.quorum: dynamic`): it keeps running as an "
    "observer; the voter sets before and after are recorded, `info` if the quorum still lists "
    "it | add it back by its directory id, verified a voter again |\n"
    "| `remove-broker` | decommission a broker: every replica it holds moved off (to a broker "
    "holding none of that partition, else dropped), stopped, unregistered, verified gone from "
    "the registered brokers and holding no replica; what moved where recorded | a fresh broker "
    "with its id (empty storage, formatted again), verified registered, and the replicas moved "
    "back |\n"
    "| `unclean-failover` | claims C2/C5 as one sequence: cut the followers' fetch links, wait "
    "for ISR = {leader}, keep writing, kill the leader, elect a follower uncleanly | start the "
    "old leader |\n"
    "| `last-replica-power-loss` | KIP-966's last replica standing: cut the followers' fetch "
    "links, wait for ISR = {leader}, power-loss the leader, restore the links, record who leads "
    "within `nemesis.fault_s` (needs `cluster.storage: writeback`) | start the old leader |\n"
    "| `app-kill` | SIGKILL one instance of the application on trial (its process group, or its "
    "container killed); its supervisor starts it again after `app.restart_delay_s` | (the "
    "restart is the heal) |\n"
    "| `app-pause` | freeze one instance of the application (SIGSTOP of its process group, or "
    "`docker pause`) for `nemesis.fault_s`: longer than its session timeout, and its group moves "
    "on without it | resume it (SIGCONT, or `docker unpause`) |\n"
    "| `app-restart` | SIGTERM one instance of the application (`docker stop` of a container): a "
    "graceful stop; its supervisor starts it again after `app.restart_delay_s` | (the restart is "
    "the heal) |\n"
    "| `app-partition` | cut one instance of the application off every broker: the Toxiproxy "
    "proxies of its client lane disabled | enable them |"
)

_VIA_DEGRADE = (
    "on cluster.kind ssh, `degrade` with `nemesis.degrade.type` loss, duplicate, reorder, "
    "corrupt or bandwidth makes these on the node's own kernel"
)
_VOTERS_VIA_ADMIN_TOOL = (
    "changes the voter set through kafka-trial's Java admin tool, with the directory ids the "
    "Docker kind formatted the nodes' storage with"
)

EXPECTED_REFUSALS = {
    "kill": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "stop": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "pause": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "bounce": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "partition": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "client-partition": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "client-pause": {"docker": None, "ssh": None, "bootstrap": None, "k8s": None},
    "hijack-txn": {"docker": None, "ssh": None, "bootstrap": None, "k8s": None},
    "fence-txn-id": {"docker": None, "ssh": None, "bootstrap": None, "k8s": None},
    "degrade": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "slow-follower": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "wipe": {
        "docker": None,
        "ssh": "re-formats the broker's storage with the Docker kind's cluster id",
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": "re-formats the broker's storage with the Docker kind's cluster id",
    },
    "power-loss": {
        "docker": None,
        "ssh": "needs the write-back filesystem (kt-lazyfs) under the data directory",
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": "needs the write-back filesystem (kt-lazyfs) under the data directory",
    },
    "disk-full": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "corrupt": {
        "docker": None,
        "ssh": "edits a stopped broker's segment in its Docker volume",
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": "edits a stopped broker's segment in its Docker volume",
    },
    "clock": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "kill-leader": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "isolate-broker": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "packet": {
        "docker": None,
        "ssh": _VIA_DEGRADE,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": _VIA_DEGRADE,
    },
    "rolling-restart": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "preferred-election": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "reassign": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "voter-change": {
        "docker": None,
        "ssh": _VOTERS_VIA_ADMIN_TOOL,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": _VOTERS_VIA_ADMIN_TOOL,
    },
    "remove-broker": {
        "docker": None,
        "ssh": "empties and formats the broker's Docker volume for the fresh node",
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": "empties and formats the broker's Docker volume for the fresh node",
    },
    "unclean-failover": {
        "docker": None,
        "ssh": None,
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": None,
    },
    "last-replica-power-loss": {
        "docker": None,
        "ssh": "needs the write-back filesystem (kt-lazyfs)",
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": "needs the write-back filesystem (kt-lazyfs)",
    },
    "app-kill": {"docker": None, "ssh": None, "bootstrap": None, "k8s": None},
    "app-pause": {"docker": None, "ssh": None, "bootstrap": None, "k8s": None},
    "app-restart": {"docker": None, "ssh": None, "bootstrap": None, "k8s": None},
    "app-partition": {
        "docker": None,
        "ssh": "cuts an app instance's own client lane of Toxiproxy proxies",
        "bootstrap": "kafka-trial only observes a cluster of this kind and faults nothing of it",
        "k8s": "cuts an app instance's own client lane of Toxiproxy proxies",
    },
}

EXPECTED_BUILT = {
    "kill": "ProcessFault(kind='kill', topic='trial', partition=0, roles=('random', 'leader', "
    "'controller'), name='kill')",
    "stop": "ProcessFault(kind='stop', topic='trial', partition=0, roles=('random', 'leader', "
    "'controller'), name='stop')",
    "pause": "ProcessFault(kind='pause', topic='trial', partition=0, roles=('random', 'leader', "
    "'controller'), name='pause')",
    "bounce": "ProcessFault(kind='bounce', topic='trial', partition=0, roles=('random', "
    "'leader', 'controller'), name='bounce')",
    "kill-leader": "ProcessFault(kind='kill', topic='trial', partition=0, roles=('leader',), "
    "name='kill-leader')",
    "partition": "PartitionFault(topic='trial', partition=0, topologies=('isolate-random', "
    "'isolate-leader', 'isolate-controller', 'halves', 'majorities-ring', 'bridge', "
    "'one-way'), mode='drop', name='partition')",
    "isolate-broker": "PartitionFault(topic='trial', partition=0, "
    "topologies=('isolate-random',), mode='drop', name='isolate-broker')",
    "client-partition": "ClientPartition(topic='trial', partition=0, roles=('random', 'leader', "
    "'controller'), mode='drop', scope='all', name='client-partition')",
    "client-pause": "ClientPause(name='client-pause')",
    "hijack-txn": "HijackTxn(init_s=30.0, name='hijack-txn')",
    "fence-txn-id": "HijackTxn(init_s=30.0, name='fence-txn-id')",
    "degrade": "Degrade(topic='trial', partition=0, toxic=Toxic(name='kt-latency', "
    "type='latency', stream='upstream', attributes={'latency': 15000, 'jitter': 0}, "
    "toxicity=1.0), links='client', roles=('random', 'leader', 'controller'), "
    "name='degrade')",
    "slow-follower": "Degrade(topic='trial', partition=0, toxic=Toxic(name='kt-latency', "
    "type='latency', stream='upstream', attributes={'latency': 15000, 'jitter': "
    "0}, toxicity=1.0), links='follower-replication', roles=('random', "
    "'leader', 'controller'), name='slow-follower')",
    "wipe": "WipeData(topic='trial', partition=0, roles=('random', 'leader', 'controller'), "
    "name='wipe')",
    "power-loss": "PowerLoss(topic='trial', partition=0, roles=('random', 'leader', "
    "'controller'), name='power-loss')",
    "disk-full": "DiskFull(topic='trial', partition=0, roles=('random', 'leader', 'controller'), "
    "name='disk-full')",
    "clock": "ClockFault(topic='trial', partition=0, roles=('random', 'leader', 'controller'), "
    "offsets_s=(120, -120), strobe_ms=0, duration_s=8.0, name='clock')",
    "corrupt": "Corrupt(topic='trial', partition=0, roles=('random', 'leader', 'controller'), "
    "modes=('bitflip', 'truncate'), name='corrupt')",
    "packet": "PacketFault(topic='trial', partition=0, roles=('random', 'leader', 'controller'), "
    "packet=PacketSpec(kind='loss', kinds=(), probability=0.2, kbit=256, delay_ms=20, "
    "scope='node'), "
    "name='packet')",
    "rolling-restart": "RollingRestart(topic='trial', in_sync_s=60.0, name='rolling-restart')",
    "preferred-election": "PreferredElection(topic='trial', settle_s=10.0, "
    "name='preferred-election')",
    "reassign": (
        "Reassign(topic='trial', partition=0, settle_s=90.0, throttle_bytes=0, started_s=5.0, "
        "name='reassign')"
    ),
    "voter-change": "VoterChange(settle_s=30.0, name='voter-change')",
    "remove-broker": "RemoveBroker(settle_s=120.0, unregister_s=30.0, name='remove-broker')",
    "unclean-failover": "UncleanFailover(topic='trial', partition=0, hold_s=8.0, "
    "name='unclean-failover')",
    "last-replica-power-loss": "LastReplicaStanding(topic='trial', partition=0, hold_s=8.0, "
    "name='last-replica-power-loss')",
    "app-kill": "AppFault(kind='kill', name='app-kill')",
    "app-pause": "AppFault(kind='pause', name='app-pause')",
    "app-restart": "AppFault(kind='restart', name='app-restart')",
    "app-partition": "AppFault(kind='partition', name='app-partition')",
}

EXPECTED_BUILDERS_ORDER = [
    "kill",
    "stop",
    "pause",
    "bounce",
    "kill-leader",
    "partition",
    "isolate-broker",
    "client-partition",
    "client-pause",
    "hijack-txn",
    "fence-txn-id",
    "degrade",
    "slow-follower",
    "wipe",
    "power-loss",
    "disk-full",
    "clock",
    "corrupt",
    "packet",
    "rolling-restart",
    "preferred-election",
    "reassign",
    "voter-change",
    "remove-broker",
    "unclean-failover",
    "last-replica-power-loss",
    "app-kill",
    "app-pause",
    "app-restart",
    "app-partition",
]
