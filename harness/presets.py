"""Named presets: the articles' recommended and dangerous settings, each with the
anomaly types it is expected to show (allowed, so they do not fail the run).

A preset is a partial config; a config file and flags override it.
"""

from __future__ import annotations

from typing import Any

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
        "producer": {"acks": "all", "idempotence": False, "max_in_flight": 5},
        "nemesis": {"faults": ["degrade", "kill-leader"], **_RESET_CLIENT_LINKS},
        "check": {"allowed": ["reorder", "int-nonmonotonic-send", "duplicate"]},
    },
    "idempotent-retries": {
        "name": "idempotent-retries",
        "producer": {"acks": "all", "idempotence": True, "max_in_flight": 5},
        "nemesis": {"faults": ["degrade", "kill-leader"], **_RESET_CLIENT_LINKS},
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
