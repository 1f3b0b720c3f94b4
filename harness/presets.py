"""Named presets: the articles' recommended and dangerous settings, each with the
anomaly types it is expected to show (allowed, so they do not fail the run).

A preset is a partial config; a config file and flags override it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from kafka_trial.contracts.errors import TrialError

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
_SHORT_REQUESTS = {"request_timeout_ms": 1500}

PRESETS: dict[str, dict[str, Any]] = {
    "safe": {
        "name": "safe",
        "topic": {
            "replication_factor": 3,
            "min_insync_replicas": 2,
            "unclean_leader_election": False,
        },
        "producer": {"acks": "all", "idempotence": True},
        "nemesis": {"faults": ["kill-leader", "isolate-broker", "pause"]},
        "check": {"allowed": []},
    },
    "acks0": {
        "name": "acks0",
        "producer": {"acks": "0", "idempotence": False, "retries": 0},
        "nemesis": {"faults": ["kill-leader"]},
        "check": {"allowed": ["lost-write", "unseen"]},
    },
    "acks1": {
        "name": "acks1",
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
    "min-isr-1": {
        "name": "min-isr-1",
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
    "unclean": {
        "name": "unclean",
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
    "no-idempotence-retries": {
        "name": "no-idempotence-retries",
        "producer": {"acks": "all", "idempotence": False, "max_in_flight": 1},
        "nemesis": {"faults": ["degrade", "kill-leader"], **_RESET_CLIENT_LINKS},
        "check": {"allowed": ["duplicate"]},
    },
    "inflight-reorder": {
        "name": "inflight-reorder",
        "producer": {"acks": "all", "idempotence": False, "max_in_flight": 5, **_SHORT_REQUESTS},
        "nemesis": _STALLED_ACKS,
        "check": {"allowed": ["reorder", "int-nonmonotonic-send", "client-reorder", "duplicate"]},
    },
    "idempotent-retries": {
        "name": "idempotent-retries",
        "producer": {"acks": "all", "idempotence": True, "max_in_flight": 5, **_SHORT_REQUESTS},
        "nemesis": _STALLED_ACKS,
        "check": {"allowed": []},
    },
    "producer-restart-resend": {
        "name": "producer-restart-resend",
        "producer": {
            "acks": "all",
            "idempotence": True,
            "crash_fraction": 0.05,
            "resend_unacked": True,
        },
        "nemesis": {"faults": ["kill-leader"]},
        "check": {"allowed": ["duplicate"]},
    },
    "leader-epoch": {
        "name": "leader-epoch",
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
    "hw-visibility": {
        "name": "hw-visibility",
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
    "auto-commit": {
        "name": "auto-commit",
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
    "commit-before-process": {
        "name": "commit-before-process",
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
    "commit-after-process": {
        "name": "commit-after-process",
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
    "rebalance": {
        "name": "rebalance",
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
    "txn": {
        "name": "txn",
        "producer": {"transactional": True, "abort_fraction": 0.2, "txn_partitions": 3},
        "consumer": {"workers": 1, "isolation_level": "read_committed"},
        "nemesis": {"faults": ["kill-leader", "pause"], "targets": ["leader"]},
        "check": {"allowed": []},
    },
    "eos-copier": {
        "name": "eos-copier",
        "producer": {"acks": "all", "idempotence": True},
        "copier": {"workers": 2, "crash_fraction": 0.1},
        "nemesis": {"faults": ["kill-leader"]},
        "check": {"allowed": []},
    },
    # A hunt for KAFKA-17754 (docs/findings.md): transactions end, half of them by an
    # abort that does not wait for their sends, while requests to the leader are held
    # past the request timeout by a pause or a slow client link. A stale request that
    # landed in the next transaction would be an aborted-read for read_committed.
    "txn-delayed-produce": {
        "name": "txn-delayed-produce",
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
}


@dataclass(frozen=True)
class Claim:
    """The article claim a preset puts on trial (shared/CLAIMS.md)."""

    id: str
    text: str
    expected: Literal["anomaly", "none"]  # what the articles say a run should show
    anomalies: tuple[str, ...]  # the anomaly types the claim is about


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
}

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
