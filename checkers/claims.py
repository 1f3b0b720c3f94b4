"""The claims from articles on Kafka's guarantees that the presets put on trial
(`CLAIMS`, below), and whether a judged run bears one out.

Keyed by preset name; the report, the campaign and `kafka-trial presets` ask here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kafka_trial.checkers.results import Results


@dataclass(frozen=True)
class Claim:
    """A claim from an article on Kafka that a preset puts on trial: its id (C1, ...),
    its words, what the article says a run should show, and the anomaly types it is
    about."""

    id: str
    text: str
    expected: Literal["anomaly", "none"]  # what the articles say a run should show
    anomalies: tuple[str, ...]  # the anomaly types the claim is about

    def expectation(self) -> str:
        names = ", ".join(self.anomalies)
        return f"{names} can appear" if self.expected == "anomaly" else f"never {names}"

    def judge(self, results: Results | None) -> Bearing:
        """Whether this run bears the claim out."""
        if results is None:
            return Bearing(None, "not judged (no results)")
        seen = [n for n in self.anomalies if results.count(n)]
        if self.expected == "anomaly":
            if seen:
                return Bearing(True, f"borne out: {', '.join(seen)} observed")
            return Bearing(
                False,
                "not borne out in this run: the expected anomaly did not appear "
                "(a claim of possibility needs faults that hit at the right moment)",
            )
        if not seen and results.valid is True:
            return Bearing(True, "borne out: none of " + ", ".join(self.anomalies) + " appeared")
        return Bearing(False, "NOT borne out: " + (", ".join(seen) or "the verdict is not valid"))


CLAIMS: dict[str, Claim] = {
    "safe": Claim(
        "C4",
        "acks=all, min.insync.replicas>=2, RF>=3 and no unclean election lose no "
        "acknowledged write under one broker failure or partition",
        "none",
        ("lost-write", "inconsistent-offsets"),
    ),
    "acks0": Claim("C1", "acks=0 loses messages silently", "anomaly", ("lost-write",)),
    "acks1": Claim(
        "C2",
        "acks=1 loses acknowledged writes if the leader dies before followers copy them",
        "anomaly",
        ("lost-write",),
    ),
    "min-isr-1": Claim(
        "C3",
        "acks=all with min.insync.replicas=1 degrades to acks=1 once the ISR shrinks to the leader",
        "anomaly",
        ("lost-write",),
    ),
    "unclean": Claim(
        "C5",
        "unclean leader election lets an out-of-sync replica lead and truncates "
        "acknowledged writes",
        "anomaly",
        ("lost-write", "inconsistent-offsets"),
    ),
    "no-idempotence-retries": Claim(
        "C6",
        "retries without idempotence duplicate messages when an acknowledgement is lost",
        "anomaly",
        ("duplicate",),
    ),
    "inflight-reorder": Claim(
        "C7",
        "max.in.flight>1 with retries and no idempotence can reorder messages in a partition",
        "anomaly",
        ("reorder", "int-nonmonotonic-send", "client-reorder"),
    ),
    "idempotent-retries": Claim(
        "C8",
        "idempotence removes retry duplicates and keeps order within a producer session",
        "none",
        ("duplicate", "reorder", "int-nonmonotonic-send", "client-reorder"),
    ),
    "producer-restart-resend": Claim(
        "C9",
        "idempotence is per session: a producer restart may resend, giving duplicates",
        "anomaly",
        ("duplicate",),
    ),
    "txn": Claim(
        "C10",
        "transactions are atomic across partitions, and read_committed never sees aborted records",
        "none",
        ("aborted-read", "torn-txn"),
    ),
    "eos-copier": Claim(
        "C11",
        "consume-transform-produce with send_offsets_to_transaction is exactly once",
        "none",
        ("eos-output-lost", "eos-output-duplicate"),
    ),
    "eos-failover": Claim(
        "C11",
        "consume-transform-produce with send_offsets_to_transaction is exactly once, also "
        "when the group's or the transactions' coordinator fails over",
        "none",
        ("eos-output-lost", "eos-output-duplicate"),
    ),
    "leader-epoch": Claim(
        "C12",
        "leader epoch (KIP-101) prevents replica divergence after failover and an old "
        "leader's return",
        "none",
        ("inconsistent-offsets",),
    ),
    "hw-visibility": Claim(
        "C13",
        "consumers only see records below the high watermark, so never a record that "
        "later disappears",
        "none",
        ("vanished-read",),
    ),
    "power-loss": Claim(
        "C14",
        "Kafka acknowledges before fsync; a simultaneous crash of every replica can lose "
        "acknowledged data",
        "anomaly",
        ("lost-write",),
    ),
    "power-loss-fsync": Claim(
        "C14-fsync",
        "with flush.messages=1 every replica fsyncs a record before it is acknowledged, "
        "so a simultaneous crash of every replica loses no acknowledged data",
        "none",
        ("lost-write",),
    ),
    "disk-full": Claim(
        "disk",
        "a full disk on one broker loses no acknowledged write with acks=all and min.isr 2: "
        "the broker halts and the other replicas hold every record",
        "none",
        ("lost-write",),
    ),
    "power-loss-one": Claim(
        "power-1",
        "a power loss of one broker at a time loses no acknowledged write: the other "
        "replicas hold it",
        "none",
        ("lost-write",),
    ),
    "corrupt": Claim(
        "corrupt",
        "a corrupted segment tail on one broker loses no acknowledged write with acks=all "
        "and min.isr 2: recovery truncates the damage and the broker refetches it",
        "none",
        ("lost-write",),
    ),
    "last-replica": Claim(
        "KIP-966",
        "with Eligible Leader Replicas (Kafka 4.x) a power loss of the ISR's last member "
        "loses no acknowledged write; without them (3.9) it can",
        "none",
        ("lost-write",),
    ),
    "reassign": Claim(
        "reassign",
        "a partition reassignment under acks=all loses no acknowledged write, even with "
        "the partition's leader killed while its replicas move",
        "none",
        ("lost-write",),
    ),
    "packet": Claim(
        "packet",
        "packet loss, duplication and reordering below TCP never duplicate, reorder or lose "
        "acknowledged records with the idempotent producer: TCP turns them into "
        "retransmissions and latency",
        "none",
        ("lost-write", "duplicate", "reorder", "client-reorder"),
    ),
    "fence-txn-id": Claim(
        "fence-txn-id",
        "a fenced producer's late writes never land: once another producer has taken over "
        "its transactional.id, no transaction it begins commits, and nothing it aborted is "
        "read",
        "none",
        ("fenced-write", "aborted-read", "torn-txn"),
    ),
    "voter-change": Claim(
        "voter",
        "a KRaft voter removed and added back during a network partition keeps the metadata "
        "log whole: back as a voter, it holds the log to the high watermark, and no "
        "acknowledged write is lost",
        "none",
        ("lost-write",),
    ),
    "remove-broker": Claim(
        "remove-broker",
        "a broker decommissioned under acks=all, its replicas moved to the brokers that "
        "held none, then stopped and unregistered, and a fresh node added in its place, "
        "loses no acknowledged write",
        "none",
        ("lost-write",),
    ),
    "clock-txn": Claim(
        "clock-txn",
        "a transaction coordinator's clock jump aborts transactions it thinks timed out, "
        "and none is torn or read uncommitted",
        "none",
        ("aborted-read", "torn-txn"),
    ),
    "clock-retention": Claim(
        "clock-retention",
        "time-based retention trusts the leader's wall clock: a leader whose clock jumps "
        "ahead deletes acknowledged records long before retention.ms has passed, and the "
        "followers follow its log start offset",
        "anomaly",
        ("lost-write",),
    ),
    "auto-commit": Claim(
        "C16",
        "auto-commit can lose messages for the application: offsets are committed before "
        "processing finishes",
        "anomaly",
        ("group-missed",),
    ),
    "commit-after-process": Claim(
        "C17",
        "commit after processing gives at-least-once: a crash before the commit means reprocessing",
        "anomaly",
        ("group-redelivered",),
    ),
    "rebalance": Claim(
        "C18",
        "a rebalance during processing redelivers uncommitted messages",
        "anomaly",
        ("group-redelivered",),
    ),
    "commit-before-process": Claim(
        "C19",
        "commit before processing gives at-most-once: a crash loses messages",
        "anomaly",
        ("group-missed",),
    ),
    "txn-delayed-produce": Claim(
        "KAFKA-17754",
        "a produce request delayed past the end of its transaction does not land in a "
        "later one (fixed by transaction protocol v2, which librdkafka 2.16 does not speak)",
        "none",
        ("aborted-read", "torn-txn", "lost-write"),
    ),
    "txn-jepsen": Claim(
        "KAFKA-17754",
        "a produce or EndTxn delayed past its transaction's end, by pauses, latency or a "
        "coordinator's own timeout abort, does not land in a later transaction (Jepsen's "
        "recipe, with librdkafka)",
        "none",
        ("aborted-read", "torn-txn", "lost-write"),
    ),
    "txn-cycles": Claim(
        "cycles",
        "read_uncommitted does not isolate transactions: a transaction's reads of others "
        "still open close dependency cycles (Elle's G1c), which read_committed never shows",
        "anomaly",
        ("G1c", "G1c-process", "G1c-realtime"),
    ),
}


@dataclass(frozen=True)
class Bearing:
    """What one run says about a claim: borne out (True), not (False), or not judged."""

    borne: bool | None
    text: str
