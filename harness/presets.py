"""Named presets: the articles' recommended and dangerous settings, each with the
claim it puts on trial and the anomaly types it is expected to show (allowed, so
they do not fail the run).

A preset is a partial config; a config file and flags override it. Each is one
`Preset` in `ALL_PRESETS`; `PRESETS` and `PRESET_WORDS` are views of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALY_TYPES
from kafka_trial.checkers.claims import CLAIMS, Claim
from kafka_trial.contracts.errors import TrialError
from kafka_trial.nemesis.catalog import PACKAGES

__all__ = ["ALL_PRESETS", "CLAIMS", "PRESETS", "PRESET_WORDS", "Claim", "Preset", "preset"]


@dataclass(frozen=True)
class Preset:
    """One named preset: its settings, what they and its faults are in words (the
    README's preset table and `kafka-trial presets`), and the claim it puts on trial.

    The claim is the checkers' (`CLAIMS[name]`): the report, below the harness,
    reads claims by preset name too, so their texts cannot live here."""

    name: str
    sets: str  # what it sets, in words
    runs: str  # which faults it runs, in words
    # The partial config, without its name (`settings` adds it): topic, producer,
    # consumer, copier, cluster, nemesis, check.
    config: dict[str, Any]
    claim: Claim = field(init=False, repr=False)
    settings: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        claim = CLAIMS.get(self.name)
        if claim is None:
            raise ValueError(f"preset {self.name} puts no claim on trial (checkers.claims)")
        if "name" in self.config:
            raise ValueError(f"preset {self.name}: its name is the Preset's, not its config's")
        object.__setattr__(self, "claim", claim)
        object.__setattr__(self, "settings", {"name": self.name, **self.config})
        unknown = [f for f in self.faults if f not in PACKAGES]
        unknown += [a for a in self.allowed if a not in ANOMALY_TYPES]
        if unknown:
            raise ValueError(f"preset {self.name} names unknown faults or anomalies: {unknown}")
        # A claim of possibility is borne out by its anomalies, which must not fail
        # the run; a claim that they never appear is hidden if they are allowed.
        about, allowed = set(claim.anomalies), set(self.allowed)
        if (about - allowed) if claim.expected == "anomaly" else (about & allowed):
            raise ValueError(
                f"preset {self.name}: allowed {sorted(allowed)} contradicts claim {claim.id} "
                f"({claim.expectation()})"
            )

    @property
    def faults(self) -> tuple[str, ...]:
        """The fault packages it runs (nemesis.faults)."""
        return tuple(self.config.get("nemesis", {}).get("faults", ()))

    @property
    def allowed(self) -> tuple[str, ...]:
        """The anomaly types it expects and lets pass (check.allowed)."""
        return tuple(self.config.get("check", {}).get("allowed", ()))

    @property
    def words(self) -> tuple[str, str]:
        return (self.sets, self.runs)


_RESET_CLIENT_LINKS = {
    "degrade": {
        "type": "reset_peer",
        "attributes": {"timeout": 200},
        "stream": "downstream",
        "links": "client",
    },
    "targets": ["leader"],
}

# Claims C7 and C8 (docs/findings.md): a follower whose fetches are slowed holds back
# the high watermark, so acks=all requests the leader has already appended outwait
# their timeout and are retried while later requests, pipelined behind them, are
# acknowledged at the heal; the retried copy then lands after them. Short faults,
# many heals: a 25 s run has six.
_STALLED_ACKS = {
    "faults": ["slow-follower"],
    "fault_s": 3,
    "quiet_s": 1,
    "degrade": {
        "type": "latency",
        "attributes": {"latency": 3000, "jitter": 0},
        "stream": "upstream",
    },
}
# librdkafka's socket.max.fails (default 1) drops the connection at the first request
# timeout and fails every request on it together, which keeps their retries in order;
# with 0 the connection stays up and more reorders survive: 12-14 a run against 4-11,
# and the suite once saw 0 with the default (docs/findings.md, C7).
_SHORT_REQUESTS = {"request_timeout_ms": 1500, "librdkafka": {"socket.max.fails": 0}}


ALL_PRESETS: tuple[Preset, ...] = (
    Preset(
        "safe",
        sets="acks=all, idempotence, RF 3, min.isr 2, no unclean election",
        runs="kill-leader, isolate-broker, pause",
        config={
            "topic": {
                "replication_factor": 3,
                "min_insync_replicas": 2,
                "unclean_leader_election": False,
            },
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {"faults": ["kill-leader", "isolate-broker", "pause"]},
            "check": {"allowed": []},
        },
    ),
    Preset(
        "acks0",
        sets="acks=0",
        runs="kill-leader",
        config={
            "producer": {"acks": "0", "idempotence": False, "retries": 0},
            "nemesis": {"faults": ["kill-leader"]},
            "check": {"allowed": ["lost-write", "unseen"]},
        },
    ),
    Preset(
        "acks1",
        sets="acks=1, min.isr 1",
        runs="kill-leader, isolate-broker",
        config={
            "topic": {"min_insync_replicas": 1},
            "producer": {"acks": "1", "idempotence": False},
            "nemesis": {"faults": ["kill-leader", "isolate-broker"]},
            "check": {
                "allowed": [
                    "lost-write",
                    "unseen",
                    "inconsistent-offsets",
                    "reorder",
                    "int-nonmonotonic-send",
                    "client-reorder",
                    "duplicate",
                ]
            },
        },
    ),
    Preset(
        "min-isr-1",
        sets="acks=all, min.isr 1, one partition",
        runs="unclean-failover",
        config={
            "topic": {"partitions": 1, "min_insync_replicas": 1},
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {"faults": ["unclean-failover"]},
            "check": {
                "allowed": [
                    "lost-write",
                    "unseen",
                    "inconsistent-offsets",
                    "reorder",
                    "int-nonmonotonic-send",
                    "client-reorder",
                    "vanished-read",
                ]
            },
        },
    ),
    Preset(
        "unclean",
        sets="acks=1, min.isr 1, unclean election on",
        runs="unclean-failover",
        config={
            "topic": {"partitions": 1, "min_insync_replicas": 1, "unclean_leader_election": True},
            "producer": {"acks": "1", "idempotence": False},
            "nemesis": {"faults": ["unclean-failover"]},
            "check": {
                "allowed": [
                    "lost-write",
                    "unseen",
                    "inconsistent-offsets",
                    "reorder",
                    "int-nonmonotonic-send",
                    "client-reorder",
                    "duplicate",
                    "vanished-read",
                ]
            },
        },
    ),
    Preset(
        "no-idempotence-retries",
        sets="no idempotence, retries, 1 in flight",
        runs="degrade: reset_peer on the leader's client links; kill-leader",
        config={
            "producer": {"acks": "all", "idempotence": False, "max_in_flight": 1},
            "nemesis": {"faults": ["degrade", "kill-leader"], **_RESET_CLIENT_LINKS},
            "check": {"allowed": ["duplicate"]},
        },
    ),
    Preset(
        "inflight-reorder",
        sets="no idempotence, 5 in flight, 1.5 s request timeout, socket.max.fails 0",
        runs=(
            "slow-follower: 3 s latency on a follower's fetch link, 3 s on and 1 s off, so "
            "acks=all requests outwait their timeout after the leader appended them"
        ),
        config={
            "producer": {
                "acks": "all",
                "idempotence": False,
                "max_in_flight": 5,
                **_SHORT_REQUESTS,
            },
            "nemesis": _STALLED_ACKS,
            "check": {
                "allowed": ["reorder", "int-nonmonotonic-send", "client-reorder", "duplicate"]
            },
        },
    ),
    Preset(
        "idempotent-retries",
        sets="idempotence, 5 in flight, 1.5 s request timeout",
        runs="the same as C7",
        config={
            "producer": {"acks": "all", "idempotence": True, "max_in_flight": 5, **_SHORT_REQUESTS},
            "nemesis": _STALLED_ACKS,
            "check": {"allowed": []},
        },
    ),
    Preset(
        "producer-restart-resend",
        sets=(
            "idempotence; producers crash with sends in flight (5% of ops) and the application "
            "re-sends what was unknown"
        ),
        runs="kill-leader",
        config={
            "producer": {
                "acks": "all",
                "idempotence": True,
                "crash_fraction": 0.05,
                "resend_unacked": True,
            },
            "nemesis": {"faults": ["kill-leader"]},
            "check": {"allowed": ["duplicate"]},
        },
    ),
    Preset(
        "leader-epoch",
        sets="acks=all, min.isr 2",
        runs="kill-leader and bounce of the leader, 3 s apart",
        config={
            "topic": {"min_insync_replicas": 2},
            "producer": {"acks": "all", "idempotence": True},
            # Kill the leader, let a new one take over, bring the old one back; quickly.
            "nemesis": {
                "faults": ["kill-leader", "bounce"],
                "targets": ["leader"],
                "fault_s": 3,
                "quiet_s": 2,
            },
            "check": {"allowed": []},
        },
    ),
    Preset(
        "hw-visibility",
        sets="acks=1, min.isr 1, consumers reading during the run",
        runs="partition: isolate the leader (isolate-leader)",
        config={
            "topic": {"min_insync_replicas": 1},
            # acks=1 leaves an acknowledged tail above the high watermark on the old leader.
            "producer": {"acks": "1", "idempotence": False},
            "consumer": {"workers": 2, "isolation_level": "read_uncommitted"},
            "nemesis": {"faults": ["partition"], "topologies": ["isolate-leader"]},
            "check": {
                "allowed": [
                    "lost-write",
                    "unseen",
                    "inconsistent-offsets",
                    "reorder",
                    "int-nonmonotonic-send",
                    "client-reorder",
                    "duplicate",
                ]
            },
        },
    ),
    Preset(
        "auto-commit",
        sets="group, auto-commit, crashes before processing",
        runs="kill-leader",
        config={
            "consumer": {
                "workers": 2,
                "mode": "subscribe",
                "commit": "auto",
                "crash_fraction": 0.2,
                "crash_point": "before-process",
            },
            "nemesis": {"faults": ["kill-leader"]},
            "check": {"allowed": ["group-missed", "group-redelivered"]},
        },
    ),
    Preset(
        "commit-before-process",
        sets="group, commit before processing, crashes before processing",
        runs="kill-leader",
        config={
            "consumer": {
                "workers": 2,
                "mode": "subscribe",
                "commit": "before-process",
                "crash_fraction": 0.2,
                "crash_point": "before-process",
            },
            "nemesis": {"faults": ["kill-leader"]},
            "check": {"allowed": ["group-missed", "group-redelivered"]},
        },
    ),
    Preset(
        "commit-after-process",
        sets="group, commit after processing, crashes before the commit",
        runs="kill-leader",
        config={
            "consumer": {
                "workers": 2,
                "mode": "subscribe",
                "commit": "after-process",
                "crash_fraction": 0.2,
                "crash_point": "before-commit",
            },
            "nemesis": {"faults": ["kill-leader"]},
            "check": {"allowed": ["group-redelivered"]},
        },
    ),
    Preset(
        "rebalance",
        sets=(
            "group, commit after processing; members leave and rejoin, and stall past "
            "max.poll.interval.ms"
        ),
        runs="kill-leader",
        config={
            "consumer": {
                "workers": 3,
                "mode": "subscribe",
                "commit": "after-process",
                "batch": 20,
                "leave_fraction": 0.05,
                "stall_fraction": 0.08,
                "session_timeout_ms": 6000,
                "max_poll_interval_ms": 6000,
                "rejoin_after_s": 2,
            },
            "nemesis": {"faults": ["kill-leader"]},
            "check": {"allowed": ["group-redelivered"]},
        },
    ),
    Preset(
        "txn",
        sets="transactions over 3 partitions, 20% aborted; a read_committed consumer",
        runs="kill-leader, pause",
        config={
            "producer": {"transactional": True, "abort_fraction": 0.2, "txn_partitions": 3},
            "consumer": {"workers": 1, "isolation_level": "read_committed"},
            "nemesis": {"faults": ["kill-leader", "pause"], "targets": ["leader"]},
            "check": {"allowed": []},
        },
    ),
    Preset(
        "eos-copier",
        sets="consume-transform-produce copiers that crash before commit",
        runs="kill-leader",
        config={
            "producer": {"acks": "all", "idempotence": True},
            "copier": {"workers": 2, "crash_fraction": 0.1},
            "nemesis": {"faults": ["kill-leader"]},
            "check": {"allowed": []},
        },
    ),
    # C11's hunt (examples/campaigns/hunt-eos.yaml, docs/findings.md): the copiers'
    # group coordinator or their transaction coordinator killed while transactions
    # with offsets in them are open, with one partition per internal topic so that the
    # fault can aim at the coordinator, and the copiers' debug log on.
    Preset(
        "eos-failover",
        sets=(
            "eos-copier's copiers, 20% crash before commit, with librdkafka's debug log; one "
            "partition each for __consumer_offsets and __transaction_state"
        ),
        runs="kill of the group coordinator or the transaction coordinator",
        config={
            "cluster": {
                "broker_config": {
                    "offsets.topic.num.partitions": "1",
                    "transaction.state.log.num.partitions": "1",
                }
            },
            "producer": {"acks": "all", "idempotence": True},
            "copier": {"workers": 2, "crash_fraction": 0.2, "debug": True},
            "nemesis": {
                "faults": ["kill"],
                "targets": ["group-coordinator", "txn-coordinator"],
                "fault_s": 8,
                "quiet_s": 4,
            },
            "check": {"allowed": []},
        },
    ),
    # A hunt for KAFKA-17754 (docs/findings.md): transactions end, half of them by an
    # abort that does not wait for their sends, while requests to the leader are held
    # past the request timeout by a pause or a slow client link. A stale request that
    # landed in the next transaction would be an aborted-read for read_committed.
    Preset(
        "txn-delayed-produce",
        sets=(
            "transactions, half of them aborted without waiting for their sends, 2 s request "
            "timeout; a read_committed consumer"
        ),
        runs="pause and a 3 s latency on the client links of a partition leader",
        config={
            "producer": {
                "transactional": True,
                "clients": 8,
                "batch": 30,
                "txn_partitions": 3,
                "abort_fraction": 0.5,
                "abort_in_flight": True,
                "txn_delay_ms": 2500,
                "request_timeout_ms": 2000,
                "delivery_timeout_ms": 8000,
                "transaction_timeout_ms": 15000,
            },
            "consumer": {"workers": 1, "isolation_level": "read_committed"},
            "nemesis": {
                "faults": ["pause", "degrade"],
                "targets": ["leader"],
                "fault_s": 6,
                "quiet_s": 4,
                "degrade": {
                    "type": "latency",
                    "attributes": {"latency": 3000, "jitter": 1000},
                    "stream": "upstream",
                    "links": "client",
                },
            },
            "check": {"allowed": []},
        },
    ),
    # KAFKA-17754 by Jepsen's own recipe (docs/findings.md, "Jepsen's recipe with
    # librdkafka (`txn-jepsen`)", under KAFKA-17754): a 1 s transaction timeout, so
    # that the coordinator aborts on its own (it looks every second here) while
    # requests are still on their way; an abort after any error;
    # pauses of the transaction coordinator and of a leader, latency on a leader's
    # client links, and clients frozen in their own processes, each past the timeout.
    # librdkafka allows no delivery timeout above the transaction timeout, nor a socket
    # timeout above it + 100 ms: Jepsen's 10 s delivery timeout is 1 s here, and its
    # 3 s request timeout is the produce request's (acks wait) only.
    Preset(
        "txn-jepsen",
        sets=(
            "Jepsen's KAFKA-17754 recipe: transactions over 3 partitions with a 1 s "
            "transaction timeout (the coordinator looks every second), 1 s delivery and 3 s "
            "request timeouts, an abort after any error; producers in processes of their own"
        ),
        runs=(
            "pause of the transaction coordinator or a leader, 2.5 s latency on its client "
            "links, client-pause; 4 s each"
        ),
        config={
            "cluster": {
                "broker_config": {
                    "transaction.state.log.num.partitions": "1",
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
                }
            },
            "producer": {
                "transactional": True,
                "own_process": True,
                "clients": 4,
                "batch": 10,
                "txn_partitions": 3,
                "transaction_timeout_ms": 1000,
                "delivery_timeout_ms": 1000,
                "request_timeout_ms": 3000,
                "abort_after_error": True,
            },
            "consumer": {"workers": 1, "isolation_level": "read_committed"},
            "nemesis": {
                "faults": ["pause", "degrade", "client-pause"],
                "targets": ["txn-coordinator", "leader"],
                "fault_s": 4,
                "quiet_s": 3,
                "degrade": {
                    "type": "latency",
                    "attributes": {"latency": 2500, "jitter": 1000},
                    "stream": "upstream",
                    "links": "client",
                },
            },
            "check": {"allowed": []},
        },
    ),
    # Transactions that read while they write, so that real histories have wr edges
    # between transactions (spark_analysis/cycles/edges.py). A transaction's poll (txn_poll) reads
    # its partitions from where its own sends landed; read_committed returns nothing
    # there (its own open transaction holds the last stable offset back), so it reads
    # read_uncommitted and returns what other open transactions interleaved with its
    # sends. Two that read each other are a G1c, which read_uncommitted allows; no
    # isolation level lets a read return a record written by an op invoked after the
    # read completed (G1c-realtime, G1c-process).
    Preset(
        "txn-cycles",
        sets=(
            "transactions over 3 partitions that read their partitions read_uncommitted before "
            "they end (txn_poll), 10% aborted; a read_uncommitted consumer"
        ),
        runs="kill-leader",
        config={
            "producer": {
                "transactional": True,
                "txn_poll": True,
                "clients": 4,
                "batch": 6,
                "txn_partitions": 3,
                "abort_fraction": 0.1,
            },
            "consumer": {"workers": 1, "isolation_level": "read_uncommitted"},
            "nemesis": {"faults": ["kill-leader"]},
            # At read_uncommitted a transaction's poll reads other transactions while they
            # are open, and an op spans its interval: T1 reads T2's write, T2 reads T3's,
            # T3 began after T1 ended. Cycles through such reads, with process and
            # realtime edges too, are what read_uncommitted permits, and real runs show
            # them (docs/findings.md, "`txn-cycles` allows G1c, G1c-process and
            # G1c-realtime"). At read_committed they are forbidden.
            "check": {
                "allowed": [
                    "G1c",
                    "G1c-process",
                    "G1c-realtime",
                    "precommitted-read",
                    "aborted-read",
                ]
            },
        },
    ),
    # C14: Kafka fsyncs no produced record by default (log.flush.interval.messages
    # and .ms are Long.MAX_VALUE), and acks=all acknowledges once every ISR replica
    # has the record in its page cache. A power failure of every replica at once
    # (kt-lazyfs drops what was not fsynced) loses that tail on all of them.
    Preset(
        "power-loss",
        sets=(
            "acks=all, idempotence, RF 3, min.isr 2, Kafka's default flush (never); brokers "
            "on kt-lazyfs (cluster.storage writeback)"
        ),
        runs="power-loss of all brokers at once, 1 s down and 15 s up",
        config={
            "cluster": {"storage": "writeback"},
            "topic": {"replication_factor": 3, "min_insync_replicas": 2},
            "producer": {"acks": "all", "idempotence": True},
            # Brokers take ~10-20 s to recover and the idempotent producers to resume, so
            # the quiet time gives them that long before the next loss (docs/findings.md,
            # "`power-loss` leaves 15 s between losses").
            "nemesis": {"faults": ["power-loss"], "targets": ["all"], "fault_s": 1, "quiet_s": 15},
            # The log ends where the replicas' fsynced data ends, and the offsets past it
            # are handed out again: an acknowledged offset then holds another value
            # (inconsistent-offsets), and a producer's or a process's later send can land
            # below its earlier one (client-reorder, reorder: 160 in the suite's 20 s run,
            # where processes outlived the loss), and reorder's form within one op
            # (int-nonmonotonic-send). All follow from the loss of the claim.
            "check": {
                "allowed": [
                    "lost-write",
                    "inconsistent-offsets",
                    "client-reorder",
                    "reorder",
                    "int-nonmonotonic-send",
                ]
            },
        },
    ),
    # C14's twin: flush.messages=1 fsyncs each record on every replica before the
    # follower's next fetch lets the leader acknowledge it.
    Preset(
        "power-loss-fsync",
        sets="the same with flush.messages=1 on the topic",
        runs="the same as C14",
        config={
            "cluster": {"storage": "writeback"},
            "topic": {"replication_factor": 3, "min_insync_replicas": 2, "flush_messages": 1},
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {"faults": ["power-loss"], "targets": ["all"], "fault_s": 1, "quiet_s": 15},
            "check": {"allowed": []},
        },
    ),
    # A full disk on one broker, the partition's leader or another: Kafka takes the
    # log directory whose write failed offline, and with no other the broker halts.
    # The other two replicas hold every acknowledged record (acks=all, min.isr 2), so
    # nothing acknowledged may be lost; a loss is a finding.
    Preset(
        "disk-full",
        sets="acks=all, idempotence, RF 3, min.isr 2; brokers on kt-lazyfs",
        runs="disk-full on the leader or a random broker, 5 s full and 10 s free",
        config={
            "cluster": {"storage": "writeback"},
            "topic": {"replication_factor": 3, "min_insync_replicas": 2},
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {
                "faults": ["disk-full"],
                "targets": ["leader", "random"],
                "fault_s": 5,
                "quiet_s": 10,
            },
            "check": {"allowed": []},
        },
    ),
    # A power loss of one broker at a time, the leader among them: the two others
    # hold every acknowledged record in their page caches, so replication covers it.
    Preset(
        "power-loss-one",
        sets="acks=all, idempotence, RF 3, min.isr 2; brokers on kt-lazyfs",
        runs="power-loss of the leader or a random broker, one at a time, 12 s apart",
        config={
            "cluster": {"storage": "writeback"},
            "topic": {"replication_factor": 3, "min_insync_replicas": 2},
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {
                "faults": ["power-loss"],
                "targets": ["leader", "random"],
                "fault_s": 1,
                "quiet_s": 12,
            },
            "check": {"allowed": []},
        },
    ),
    # Bit rot or a torn tail in one broker's active segment (the leader's or
    # another's), found by Kafka's recovery of an uncleanly stopped log: with acks=all
    # and min.isr 2 another replica holds every acknowledged record.
    Preset(
        "corrupt",
        sets="acks=all, idempotence, RF 3, min.isr 2",
        runs=(
            "corrupt: the leader or a random broker killed, its active segment's tail "
            "bit-flipped or truncated in turn, restarted; 12 s apart"
        ),
        config={
            "topic": {"replication_factor": 3, "min_insync_replicas": 2},
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {
                "faults": ["corrupt"],
                "targets": ["leader", "random"],
                "fault_s": 1,
                "quiet_s": 12,
            },
            "check": {"allowed": []},
        },
    ),
    # KIP-966's "last replica standing": the ISR shrinks to the leader (its
    # followers cut off), the leader loses power, the followers come back. With
    # Eligible Leader Replicas (4.x) a follower that left the ISR below min.isr may
    # lead; without (3.9) the partition waits for the old leader and what it fsynced.
    Preset(
        "last-replica",
        sets=(
            "acks=all, idempotence, RF 3, min.isr 2, no unclean election, one partition; "
            "replica.lag.time.max.ms 5 s; brokers on kt-lazyfs"
        ),
        runs=(
            "last-replica-power-loss: ISR shrunk to the leader, the leader's power lost, "
            "the followers back; 20 s to elect"
        ),
        config={
            "cluster": {
                "storage": "writeback",
                "broker_config": {"replica.lag.time.max.ms": "5000"},
            },
            "topic": {
                "partitions": 1,
                "replication_factor": 3,
                "min_insync_replicas": 2,
                "unclean_leader_election": False,
            },
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {"faults": ["last-replica-power-loss"], "fault_s": 20, "quiet_s": 10},
            "check": {"allowed": []},
        },
    ),
    # A transaction coordinator whose wall clock jumps (one coordinator: one
    # __transaction_state partition): +120 s puts every transaction open across the
    # jump past its 60 s timeout, and the jump back to true does the same to those
    # begun while it was 120 s behind. Transactions stay open 2 s and the coordinator
    # looks for timed-out ones every second, so the jumps find some open (with
    # transactions of milliseconds, 3 runs of +-120 s aborted none). Aborted, never
    # torn or read.
    Preset(
        "clock-txn",
        sets=(
            "transactions over 3 partitions held open 2 s, 20% aborted, 60 s transaction "
            "timeout; one transaction coordinator, which looks for timed-out transactions "
            "every second; brokers on libfaketime (cluster.clock faketime)"
        ),
        runs="clock: the coordinator's wall clock +120 s, then -120 s, 8 s each",
        config={
            "cluster": {
                "clock": "faketime",
                "broker_config": {
                    "transaction.state.log.num.partitions": "1",
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
                },
            },
            "producer": {
                "transactional": True,
                "abort_fraction": 0.2,
                "txn_partitions": 3,
                "txn_delay_ms": 2000,
            },
            "consumer": {"workers": 1, "isolation_level": "read_committed"},
            "nemesis": {
                "faults": ["clock"],
                "targets": ["txn-coordinator"],
                "clock": {"offsets_s": [120, -120]},
                "fault_s": 8,
                "quiet_s": 8,
            },
            "check": {"allowed": []},
        },
    ),
    # A partition leader whose wall clock jumps an hour ahead, under time-based
    # retention of 10 minutes: by its clock every closed segment (one rolls every
    # 5 s) is old enough to delete, and the followers follow its log start offset.
    # Every acknowledged record below it is gone (docs/findings.md: 110,660 to
    # 200,912 a 40 s run, 3 of 3).
    Preset(
        "clock-retention",
        sets="acks=all, idempotence; retention.ms 10 min, segment.ms 5 s; brokers on libfaketime",
        runs="clock: the leader's wall clock +1 h for 8 s",
        config={
            "cluster": {
                "clock": "faketime",
                "broker_config": {"log.retention.check.interval.ms": "2000"},
            },
            "topic": {
                "replication_factor": 3,
                "min_insync_replicas": 2,
                "retention_ms": 600000,
                "segment_ms": 5000,
            },
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {
                "faults": ["clock"],
                "targets": ["leader"],
                "clock": {"offsets_s": [3600]},
                "fault_s": 8,
                "quiet_s": 12,
            },
            "check": {"allowed": ["lost-write"]},
        },
    ),
    # A reassignment that copies data: two replicas of three brokers, so the move adds
    # one to the broker that held none and drops one, while the leader may be killed
    # mid-move: the seed draws the two into a period together or apart, and a kill drawn
    # with the move runs as soon as the controller shows the move going (the
    # reassignment's heal waits for it, after the kill's start).
    Preset(
        "reassign",
        sets="acks=all, idempotence, RF 2 of 3 brokers, min.isr 2, no unclean election",
        runs=(
            "reassign (a replica moved to the broker that held none) and kill-leader, interleaved"
        ),
        config={
            "topic": {
                "replication_factor": 2,
                "min_insync_replicas": 2,
                "unclean_leader_election": False,
            },
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {
                "faults": ["reassign", "kill"],
                "targets": ["leader"],
                "fault_s": 8,
                "quiet_s": 6,
            },
            "check": {"allowed": []},
        },
    ),
    # Below TCP: the packets a broker sends lost, cloned or held back, one kind per
    # fault. TCP should hide all of it from Kafka as retransmissions and latency.
    Preset(
        "packet",
        sets="acks=all, idempotence, 5 in flight, RF 3, min.isr 2",
        runs=(
            "packet: 20% of what the leader or a random broker sends lost, duplicated or "
            "held back 20 ms (reordered), one kind per fault"
        ),
        config={
            "topic": {"replication_factor": 3, "min_insync_replicas": 2},
            "producer": {"acks": "all", "idempotence": True, "max_in_flight": 5},
            "nemesis": {
                "faults": ["packet"],
                "targets": ["leader", "random"],
                "packet": {"kinds": ["loss", "duplicate", "reorder"], "probability": 0.2},
                "fault_s": 8,
                "quiet_s": 6,
            },
            "check": {"allowed": []},
        },
    ),
    # Fencing: a second producer takes a live transactional producer's id over while
    # it writes (Redpanda's hijack_tx_ids); a read_committed consumer reads on.
    Preset(
        "fence-txn-id",
        sets="transactions over 3 partitions, 10% aborted; a read_committed consumer",
        runs=(
            "fence-txn-id: another producer's init_transactions with a running producer's "
            "transactional.id, which fences it"
        ),
        config={
            "producer": {"transactional": True, "abort_fraction": 0.1, "txn_partitions": 3},
            "consumer": {"workers": 1, "isolation_level": "read_committed"},
            "nemesis": {"faults": ["fence-txn-id"], "fault_s": 4, "quiet_s": 4},
            "check": {"allowed": []},
        },
    ),
    # An operator's decommission: a fourth broker, so that every replica of RF 3 on the
    # broker taken out has a broker holding none of its partition to move to (with
    # three, the move could only drop a replica); the quorum is dynamic, because the
    # fresh node's controller is a new replica that takes the old one's place. The
    # decommission takes about 10 s and the fresh node's return about 30 s, so one
    # period of 16 s fills a 40 s run (two of 8 s left the second never started).
    Preset(
        "remove-broker",
        sets=(
            "acks=all, idempotence, RF 3 of 4 brokers, min.isr 2, no unclean election; a "
            "dynamic KRaft quorum"
        ),
        runs=(
            "remove-broker: a broker's replicas moved to brokers that held none, the broker "
            "stopped and unregistered; a fresh node in its place (empty storage, a new "
            "voter replica), its replicas moved back"
        ),
        config={
            "cluster": {"brokers": 4, "quorum": "dynamic"},
            "topic": {
                "replication_factor": 3,
                "min_insync_replicas": 2,
                "unclean_leader_election": False,
            },
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {"faults": ["remove-broker"], "fault_s": 16, "quiet_s": 6},
            "check": {"allowed": []},
        },
    ),
    # KIP-853: a voter leaves and comes back while a broker is cut off. The partition
    # is listed first, so a period that draws both cuts first, removes the voter
    # inside the cut, and adds it back (heals run in reverse) before the cut heals;
    # the add-back waits until every voter holds the metadata log up to the high
    # watermark.
    Preset(
        "voter-change",
        sets=(
            "acks=all, idempotence, RF 3, min.isr 2; a dynamic KRaft quorum (KIP-853, "
            "cluster.quorum dynamic)"
        ),
        runs=(
            "a network partition, and inside it voter-change (the quorum leader or "
            "another voter removed, then added back before the partition heals)"
        ),
        config={
            "cluster": {"quorum": "dynamic"},
            "topic": {"replication_factor": 3, "min_insync_replicas": 2},
            "producer": {"acks": "all", "idempotence": True},
            "nemesis": {"faults": ["partition", "voter-change"], "fault_s": 8, "quiet_s": 6},
            "check": {"allowed": []},
        },
    ),
)

# Every claim is some preset's: one without would be a claim nothing puts on trial.
if set(CLAIMS) != {p.name for p in ALL_PRESETS}:
    raise ImportError(f"presets and claims disagree: {set(CLAIMS) ^ {p.name for p in ALL_PRESETS}}")

# Settings by name, in the order `kafka-trial presets` and the errors list them.
PRESETS: dict[str, dict[str, Any]] = {p.name: p.settings for p in ALL_PRESETS}
if len(PRESETS) != len(ALL_PRESETS):
    raise ImportError("two presets have one name")

# The README's preset table has an order of its own, which it keeps.
_TABLE_ORDER = (
    "safe",
    "acks0",
    "acks1",
    "min-isr-1",
    "unclean",
    "no-idempotence-retries",
    "inflight-reorder",
    "idempotent-retries",
    "producer-restart-resend",
    "txn",
    "eos-copier",
    "txn-jepsen",
    "eos-failover",
    "leader-epoch",
    "hw-visibility",
    "auto-commit",
    "commit-after-process",
    "rebalance",
    "commit-before-process",
    "txn-delayed-produce",
    "txn-cycles",
    "power-loss",
    "power-loss-fsync",
    "disk-full",
    "clock-txn",
    "clock-retention",
    "power-loss-one",
    "corrupt",
    "last-replica",
    "reassign",
    "remove-broker",
    "packet",
    "voter-change",
    "fence-txn-id",
)
if sorted(_TABLE_ORDER) != sorted(PRESETS):
    raise ImportError(f"_TABLE_ORDER and the presets disagree: {set(_TABLE_ORDER) ^ set(PRESETS)}")
_BY_NAME = {p.name: p for p in ALL_PRESETS}

# What each preset sets and which faults it runs, in words: the README's preset
# table and `kafka-trial presets` both render these, so the two never differ.
PRESET_WORDS: dict[str, tuple[str, str]] = {n: _BY_NAME[n].words for n in _TABLE_ORDER}


def markdown_table() -> str:
    """The README's preset table, rendered from the presets and their claims."""
    rows = ["| preset | claim | settings | faults |", "|---|---|---|---|"]
    for name in _TABLE_ORDER:
        p = _BY_NAME[name]
        rows.append(f"| `{name}` | {p.claim.id} | {p.sets} | {p.runs} |")
    return "\n".join(rows)


# Presets that need a workload kafka-trial does not have yet (none at present).
PLANNED: tuple[str, ...] = ()


def preset(name: str) -> dict[str, Any]:
    if name in PRESETS:
        return PRESETS[name]
    if name in PLANNED:
        raise TrialError(
            f"preset {name} needs a workload kafka-trial does not have yet",
            f"use one of {', '.join(PRESETS)}",
        )
    raise TrialError(f"unknown preset {name}", f"use one of {', '.join(PRESETS)}")
