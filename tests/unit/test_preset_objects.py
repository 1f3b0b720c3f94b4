"""The presets are one `Preset` each, and the tables callers read are derived from
them: these literals are the tables as they were before the objects, so a derived
table that differs by a key, a value or an order is caught here."""

from __future__ import annotations

import json

import pytest
from kafka_trial.checkers.claims import CLAIMS as CHECKERS_CLAIMS
from kafka_trial.harness import presets
from kafka_trial.harness.presets import (
    ALL_PRESETS,
    CLAIMS,
    PLANNED,
    PRESET_WORDS,
    PRESETS,
    Preset,
    markdown_table,
)


def test_presets_are_the_tables_they_were() -> None:
    # json keeps every nested dict's order, which == does not compare.
    assert json.dumps(PRESETS) == json.dumps(EXPECTED_PRESETS)
    assert list(PRESETS) == EXPECTED_PRESET_ORDER
    assert PLANNED == EXPECTED_PLANNED


def test_preset_words_are_what_they_were_in_the_readme_order() -> None:
    assert PRESET_WORDS == EXPECTED_PRESET_WORDS
    assert list(PRESET_WORDS) == EXPECTED_WORDS_ORDER
    assert markdown_table() == EXPECTED_PRESET_TABLE


def test_claims_are_what_they_were_and_every_preset_has_one() -> None:
    assert CLAIMS is CHECKERS_CLAIMS
    got = {k: (c.id, c.text, c.expected, c.anomalies) for k, c in CLAIMS.items()}
    assert got == EXPECTED_CLAIMS
    for p in ALL_PRESETS:
        assert CLAIMS[p.name] is p.claim, p.name
    assert {p.name for p in ALL_PRESETS} == set(CLAIMS)


def test_each_object_carries_its_settings_words_faults_and_allowed() -> None:
    assert [p.name for p in ALL_PRESETS] == list(PRESETS)
    for p in ALL_PRESETS:
        assert PRESETS[p.name] is p.settings
        assert p.settings == {"name": p.name, **p.config}
        assert PRESET_WORDS[p.name] == p.words == (p.sets, p.runs)
        assert list(p.faults) == p.settings["nemesis"]["faults"]
        assert list(p.allowed) == p.settings["check"]["allowed"]
        assert presets.preset(p.name) is p.settings


@pytest.mark.parametrize(
    ("name", "config", "match"),
    [
        ("no-such-claim", {}, "puts no claim on trial"),
        ("safe", {"name": "safe"}, "its name is the Preset's"),
        ("safe", {"nemesis": {"faults": ["earthquake"]}}, "unknown faults or anomalies"),
        ("safe", {"check": {"allowed": ["lost-write"]}}, "contradicts claim C4"),
        ("acks0", {"check": {"allowed": []}}, "contradicts claim C1"),
    ],
)
def test_a_preset_that_disagrees_with_its_claim_or_the_registries_is_refused(
    name: str, config: dict, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        Preset(name, sets="", runs="", config=config)


EXPECTED_PRESETS = {
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
        "nemesis": {
            "faults": ["degrade", "kill-leader"],
            "degrade": {
                "type": "reset_peer",
                "attributes": {"timeout": 200},
                "stream": "downstream",
                "links": "client",
            },
            "targets": ["leader"],
        },
        "check": {"allowed": ["duplicate"]},
    },
    "inflight-reorder": {
        "name": "inflight-reorder",
        "producer": {
            "acks": "all",
            "idempotence": False,
            "max_in_flight": 5,
            "request_timeout_ms": 1500,
            "librdkafka": {"socket.max.fails": 0},
        },
        "nemesis": {
            "faults": ["slow-follower"],
            "fault_s": 3,
            "quiet_s": 1,
            "degrade": {
                "type": "latency",
                "attributes": {"latency": 3000, "jitter": 0},
                "stream": "upstream",
            },
        },
        "check": {"allowed": ["reorder", "int-nonmonotonic-send", "client-reorder", "duplicate"]},
    },
    "idempotent-retries": {
        "name": "idempotent-retries",
        "producer": {
            "acks": "all",
            "idempotence": True,
            "max_in_flight": 5,
            "request_timeout_ms": 1500,
            "librdkafka": {"socket.max.fails": 0},
        },
        "nemesis": {
            "faults": ["slow-follower"],
            "fault_s": 3,
            "quiet_s": 1,
            "degrade": {
                "type": "latency",
                "attributes": {"latency": 3000, "jitter": 0},
                "stream": "upstream",
            },
        },
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
    "eos-failover": {
        "name": "eos-failover",
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
    "txn-jepsen": {
        "name": "txn-jepsen",
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
    "txn-cycles": {
        "name": "txn-cycles",
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
        "check": {
            "allowed": ["G1c", "G1c-process", "G1c-realtime", "precommitted-read", "aborted-read"]
        },
    },
    "power-loss": {
        "name": "power-loss",
        "cluster": {"storage": "writeback"},
        "topic": {"replication_factor": 3, "min_insync_replicas": 2},
        "producer": {"acks": "all", "idempotence": True},
        "nemesis": {"faults": ["power-loss"], "targets": ["all"], "fault_s": 1, "quiet_s": 15},
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
    "power-loss-fsync": {
        "name": "power-loss-fsync",
        "cluster": {"storage": "writeback"},
        "topic": {"replication_factor": 3, "min_insync_replicas": 2, "flush_messages": 1},
        "producer": {"acks": "all", "idempotence": True},
        "nemesis": {"faults": ["power-loss"], "targets": ["all"], "fault_s": 1, "quiet_s": 15},
        "check": {"allowed": []},
    },
    "disk-full": {
        "name": "disk-full",
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
    "power-loss-one": {
        "name": "power-loss-one",
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
    "corrupt": {
        "name": "corrupt",
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
    "last-replica": {
        "name": "last-replica",
        "cluster": {"storage": "writeback", "broker_config": {"replica.lag.time.max.ms": "5000"}},
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
    "clock-txn": {
        "name": "clock-txn",
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
    "clock-retention": {
        "name": "clock-retention",
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
    "reassign": {
        "name": "reassign",
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
    "packet": {
        "name": "packet",
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
    "fence-txn-id": {
        "name": "fence-txn-id",
        "producer": {"transactional": True, "abort_fraction": 0.1, "txn_partitions": 3},
        "consumer": {"workers": 1, "isolation_level": "read_committed"},
        "nemesis": {"faults": ["fence-txn-id"], "fault_s": 4, "quiet_s": 4},
        "check": {"allowed": []},
    },
    "remove-broker": {
        "name": "remove-broker",
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
    "voter-change": {
        "name": "voter-change",
        "cluster": {"quorum": "dynamic"},
        "topic": {"replication_factor": 3, "min_insync_replicas": 2},
        "producer": {"acks": "all", "idempotence": True},
        "nemesis": {"faults": ["partition", "voter-change"], "fault_s": 8, "quiet_s": 6},
        "check": {"allowed": []},
    },
}

EXPECTED_PRESET_ORDER = [
    "safe",
    "acks0",
    "acks1",
    "min-isr-1",
    "unclean",
    "no-idempotence-retries",
    "inflight-reorder",
    "idempotent-retries",
    "producer-restart-resend",
    "leader-epoch",
    "hw-visibility",
    "auto-commit",
    "commit-before-process",
    "commit-after-process",
    "rebalance",
    "txn",
    "eos-copier",
    "eos-failover",
    "txn-delayed-produce",
    "txn-jepsen",
    "txn-cycles",
    "power-loss",
    "power-loss-fsync",
    "disk-full",
    "power-loss-one",
    "corrupt",
    "last-replica",
    "clock-txn",
    "clock-retention",
    "reassign",
    "packet",
    "fence-txn-id",
    "remove-broker",
    "voter-change",
]

EXPECTED_PRESET_WORDS = {
    "safe": (
        "acks=all, idempotence, RF 3, min.isr 2, no unclean election",
        "kill-leader, isolate-broker, pause",
    ),
    "acks0": ("acks=0", "kill-leader"),
    "acks1": ("acks=1, min.isr 1", "kill-leader, isolate-broker"),
    "min-isr-1": ("acks=all, min.isr 1, one partition", "unclean-failover"),
    "unclean": ("acks=1, min.isr 1, unclean election on", "unclean-failover"),
    "no-idempotence-retries": (
        "no idempotence, retries, 1 in flight",
        "degrade: reset_peer on the leader's client links; kill-leader",
    ),
    "inflight-reorder": (
        "no idempotence, 5 in flight, 1.5 s request timeout, socket.max.fails 0",
        "slow-follower: 3 s latency on a follower's fetch link, 3 s on and 1 s "
        "off, so acks=all requests outwait their timeout after the leader "
        "appended them",
    ),
    "idempotent-retries": ("idempotence, 5 in flight, 1.5 s request timeout", "the same as C7"),
    "producer-restart-resend": (
        "idempotence; producers crash with sends in flight (5% of ops) "
        "and the application re-sends what was unknown",
        "kill-leader",
    ),
    "txn": (
        "transactions over 3 partitions, 20% aborted; a read_committed consumer",
        "kill-leader, pause",
    ),
    "eos-copier": ("consume-transform-produce copiers that crash before commit", "kill-leader"),
    "txn-jepsen": (
        "Jepsen's KAFKA-17754 recipe: transactions over 3 partitions with a 1 s "
        "transaction timeout (the coordinator looks every second), 1 s delivery and 3 "
        "s request timeouts, an abort after any error; producers in processes of "
        "their own",
        "pause of the transaction coordinator or a leader, 2.5 s latency on its "
        "client links, client-pause; 4 s each",
    ),
    "eos-failover": (
        "eos-copier's copiers, 20% crash before commit, with librdkafka's debug "
        "log; one partition each for __consumer_offsets and __transaction_state",
        "kill of the group coordinator or the transaction coordinator",
    ),
    "leader-epoch": ("acks=all, min.isr 2", "kill-leader and bounce of the leader, 3 s apart"),
    "hw-visibility": (
        "acks=1, min.isr 1, consumers reading during the run",
        "partition: isolate the leader (isolate-leader)",
    ),
    "auto-commit": ("group, auto-commit, crashes before processing", "kill-leader"),
    "commit-after-process": (
        "group, commit after processing, crashes before the commit",
        "kill-leader",
    ),
    "rebalance": (
        "group, commit after processing; members leave and rejoin, and stall past "
        "max.poll.interval.ms",
        "kill-leader",
    ),
    "commit-before-process": (
        "group, commit before processing, crashes before processing",
        "kill-leader",
    ),
    "txn-delayed-produce": (
        "transactions, half of them aborted without waiting for their sends, "
        "2 s request timeout; a read_committed consumer",
        "pause and a 3 s latency on the client links of a partition leader",
    ),
    "txn-cycles": (
        "transactions over 3 partitions that read their partitions read_uncommitted "
        "before they end (txn_poll), 10% aborted; a read_uncommitted consumer",
        "kill-leader",
    ),
    "power-loss": (
        "acks=all, idempotence, RF 3, min.isr 2, Kafka's default flush (never); "
        "brokers on kt-lazyfs (cluster.storage writeback)",
        "power-loss of all brokers at once, 1 s down and 15 s up",
    ),
    "power-loss-fsync": ("the same with flush.messages=1 on the topic", "the same as C14"),
    "disk-full": (
        "acks=all, idempotence, RF 3, min.isr 2; brokers on kt-lazyfs",
        "disk-full on the leader or a random broker, 5 s full and 10 s free",
    ),
    "clock-txn": (
        "transactions over 3 partitions held open 2 s, 20% aborted, 60 s transaction "
        "timeout; one transaction coordinator, which looks for timed-out transactions "
        "every second; brokers on libfaketime (cluster.clock faketime)",
        "clock: the coordinator's wall clock +120 s, then -120 s, 8 s each",
    ),
    "clock-retention": (
        "acks=all, idempotence; retention.ms 10 min, segment.ms 5 s; brokers on libfaketime",
        "clock: the leader's wall clock +1 h for 8 s",
    ),
    "power-loss-one": (
        "acks=all, idempotence, RF 3, min.isr 2; brokers on kt-lazyfs",
        "power-loss of the leader or a random broker, one at a time, 12 s apart",
    ),
    "corrupt": (
        "acks=all, idempotence, RF 3, min.isr 2",
        "corrupt: the leader or a random broker killed, its active segment's tail "
        "bit-flipped or truncated in turn, restarted; 12 s apart",
    ),
    "last-replica": (
        "acks=all, idempotence, RF 3, min.isr 2, no unclean election, one "
        "partition; replica.lag.time.max.ms 5 s; brokers on kt-lazyfs",
        "last-replica-power-loss: ISR shrunk to the leader, the leader's power "
        "lost, the followers back; 20 s to elect",
    ),
    "reassign": (
        "acks=all, idempotence, RF 2 of 3 brokers, min.isr 2, no unclean election",
        "reassign (a replica moved to the broker that held none) and kill-leader, interleaved",
    ),
    "packet": (
        "acks=all, idempotence, 5 in flight, RF 3, min.isr 2",
        "packet: 20% of what the leader or a random broker sends lost, duplicated or held back 20 "
        "ms (reordered), one kind per fault",
    ),
    "remove-broker": (
        "acks=all, idempotence, RF 3 of 4 brokers, min.isr 2, no unclean election; a dynamic "
        "KRaft quorum",
        "remove-broker: a broker's replicas moved to brokers that held none, the broker stopped "
        "and unregistered; a fresh node in its place (empty storage, a new voter replica), its "
        "replicas moved back",
    ),
    "voter-change": (
        "acks=all, idempotence, RF 3, min.isr 2; a dynamic KRaft quorum (KIP-853, cluster.quorum "
        "dynamic)",
        "a network partition, and inside it voter-change (the quorum leader or another voter "
        "removed, then added back before the partition heals)",
    ),
    "fence-txn-id": (
        "transactions over 3 partitions, 10% aborted; a read_committed consumer",
        "fence-txn-id: another producer's init_transactions with a running producer's "
        "transactional.id, which fences it",
    ),
}

EXPECTED_WORDS_ORDER = [
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
]

EXPECTED_CLAIMS = {
    "safe": (
        "C4",
        "acks=all, min.insync.replicas>=2, RF>=3 and no unclean election lose no "
        "acknowledged write under one broker failure or partition",
        "none",
        ("lost-write", "inconsistent-offsets"),
    ),
    "acks0": ("C1", "acks=0 loses messages silently", "anomaly", ("lost-write",)),
    "acks1": (
        "C2",
        "acks=1 loses acknowledged writes if the leader dies before followers copy them",
        "anomaly",
        ("lost-write",),
    ),
    "min-isr-1": (
        "C3",
        "acks=all with min.insync.replicas=1 degrades to acks=1 once the ISR shrinks to the leader",
        "anomaly",
        ("lost-write",),
    ),
    "unclean": (
        "C5",
        "unclean leader election lets an out-of-sync replica lead and truncates "
        "acknowledged writes",
        "anomaly",
        ("lost-write", "inconsistent-offsets"),
    ),
    "no-idempotence-retries": (
        "C6",
        "retries without idempotence duplicate messages when an acknowledgement is lost",
        "anomaly",
        ("duplicate",),
    ),
    "inflight-reorder": (
        "C7",
        "max.in.flight>1 with retries and no idempotence can reorder messages in a partition",
        "anomaly",
        ("reorder", "int-nonmonotonic-send", "client-reorder"),
    ),
    "idempotent-retries": (
        "C8",
        "idempotence removes retry duplicates and keeps order within a producer session",
        "none",
        ("duplicate", "reorder", "int-nonmonotonic-send", "client-reorder"),
    ),
    "producer-restart-resend": (
        "C9",
        "idempotence is per session: a producer restart may resend, giving duplicates",
        "anomaly",
        ("duplicate",),
    ),
    "txn": (
        "C10",
        "transactions are atomic across partitions, and read_committed never sees aborted records",
        "none",
        ("aborted-read", "torn-txn"),
    ),
    "eos-copier": (
        "C11",
        "consume-transform-produce with send_offsets_to_transaction is exactly once",
        "none",
        ("eos-output-lost", "eos-output-duplicate"),
    ),
    "eos-failover": (
        "C11",
        "consume-transform-produce with send_offsets_to_transaction is exactly "
        "once, also when the group's or the transactions' coordinator fails over",
        "none",
        ("eos-output-lost", "eos-output-duplicate"),
    ),
    "leader-epoch": (
        "C12",
        "leader epoch (KIP-101) prevents replica divergence after failover and an "
        "old leader's return",
        "none",
        ("inconsistent-offsets",),
    ),
    "hw-visibility": (
        "C13",
        "consumers only see records below the high watermark, so never a record "
        "that later disappears",
        "none",
        ("vanished-read",),
    ),
    "power-loss": (
        "C14",
        "Kafka acknowledges before fsync; a simultaneous crash of every replica can "
        "lose acknowledged data",
        "anomaly",
        ("lost-write",),
    ),
    "power-loss-fsync": (
        "C14-fsync",
        "with flush.messages=1 every replica fsyncs a record before it is "
        "acknowledged, so a simultaneous crash of every replica loses no "
        "acknowledged data",
        "none",
        ("lost-write",),
    ),
    "disk-full": (
        "disk",
        "a full disk on one broker loses no acknowledged write with acks=all and "
        "min.isr 2: the broker halts and the other replicas hold every record",
        "none",
        ("lost-write",),
    ),
    "power-loss-one": (
        "power-1",
        "a power loss of one broker at a time loses no acknowledged write: the "
        "other replicas hold it",
        "none",
        ("lost-write",),
    ),
    "corrupt": (
        "corrupt",
        "a corrupted segment tail on one broker loses no acknowledged write with "
        "acks=all and min.isr 2: recovery truncates the damage and the broker refetches "
        "it",
        "none",
        ("lost-write",),
    ),
    "last-replica": (
        "KIP-966",
        "with Eligible Leader Replicas (Kafka 4.x) a power loss of the ISR's last "
        "member loses no acknowledged write; without them (3.9) it can",
        "none",
        ("lost-write",),
    ),
    "clock-txn": (
        "clock-txn",
        "a transaction coordinator's clock jump aborts transactions it thinks timed "
        "out, and none is torn or read uncommitted",
        "none",
        ("aborted-read", "torn-txn"),
    ),
    "clock-retention": (
        "clock-retention",
        "time-based retention trusts the leader's wall clock: a leader whose "
        "clock jumps ahead deletes acknowledged records long before retention.ms "
        "has passed, and the followers follow its log start offset",
        "anomaly",
        ("lost-write",),
    ),
    "auto-commit": (
        "C16",
        "auto-commit can lose messages for the application: offsets are committed "
        "before processing finishes",
        "anomaly",
        ("group-missed",),
    ),
    "commit-after-process": (
        "C17",
        "commit after processing gives at-least-once: a crash before the commit means reprocessing",
        "anomaly",
        ("group-redelivered",),
    ),
    "rebalance": (
        "C18",
        "a rebalance during processing redelivers uncommitted messages",
        "anomaly",
        ("group-redelivered",),
    ),
    "commit-before-process": (
        "C19",
        "commit before processing gives at-most-once: a crash loses messages",
        "anomaly",
        ("group-missed",),
    ),
    "txn-delayed-produce": (
        "KAFKA-17754",
        "a produce request delayed past the end of its transaction does not "
        "land in a later one (fixed by transaction protocol v2, which "
        "librdkafka 2.16 does not speak)",
        "none",
        ("aborted-read", "torn-txn", "lost-write"),
    ),
    "txn-jepsen": (
        "KAFKA-17754",
        "a produce or EndTxn delayed past its transaction's end, by pauses, latency "
        "or a coordinator's own timeout abort, does not land in a later transaction "
        "(Jepsen's recipe, with librdkafka)",
        "none",
        ("aborted-read", "torn-txn", "lost-write"),
    ),
    "txn-cycles": (
        "cycles",
        "read_uncommitted does not isolate transactions: a transaction's reads of "
        "others still open close dependency cycles (Elle's G1c), which read_committed "
        "never shows",
        "anomaly",
        ("G1c", "G1c-process", "G1c-realtime"),
    ),
    "reassign": (
        "reassign",
        "a partition reassignment under acks=all loses no acknowledged write, even with the "
        "partition's leader killed while its replicas move",
        "none",
        ("lost-write",),
    ),
    "packet": (
        "packet",
        "packet loss, duplication and reordering below TCP never duplicate, reorder or lose "
        "acknowledged records with the idempotent producer: TCP turns them into retransmissions "
        "and latency",
        "none",
        ("lost-write", "duplicate", "reorder", "client-reorder"),
    ),
    "remove-broker": (
        "remove-broker",
        "a broker decommissioned under acks=all, its replicas moved to the brokers that held "
        "none, then stopped and unregistered, and a fresh node added in its place, loses no "
        "acknowledged write",
        "none",
        ("lost-write",),
    ),
    "voter-change": (
        "voter",
        "a KRaft voter removed and added back during a network partition keeps the metadata log "
        "whole: back as a voter, it holds the log to the high watermark, and no acknowledged write"
        " is lost",
        "none",
        ("lost-write",),
    ),
    "fence-txn-id": (
        "fence-txn-id",
        "a fenced producer's late writes never land: once another producer has taken over its "
        "transactional.id, no transaction it begins commits, and nothing it aborted is read",
        "none",
        ("fenced-write", "aborted-read", "torn-txn"),
    ),
}

EXPECTED_PRESET_TABLE = (
    "| preset | claim | settings | faults |\n"
    "|---|---|---|---|\n"
    "| `safe` | C4 | acks=all, idempotence, RF 3, min.isr 2, no unclean election | kill-leader, "
    "isolate-broker, pause |\n"
    "| `acks0` | C1 | acks=0 | kill-leader |\n"
    "| `acks1` | C2 | acks=1, min.isr 1 | kill-leader, isolate-broker |\n"
    "| `min-isr-1` | C3 | acks=all, min.isr 1, one partition | unclean-failover |\n"
    "| `unclean` | C5 | acks=1, min.isr 1, unclean election on | unclean-failover |\n"
    "| `no-idempotence-retries` | C6 | no idempotence, retries, 1 in flight | degrade: "
    "reset_peer on the leader's client links; kill-leader |\n"
    "| `inflight-reorder` | C7 | no idempotence, 5 in flight, 1.5 s request timeout, "
    "socket.max.fails 0 | slow-follower: 3 s latency on a follower's fetch link, 3 s on and 1 s "
    "off, so acks=all requests outwait their timeout after the leader appended them |\n"
    "| `idempotent-retries` | C8 | idempotence, 5 in flight, 1.5 s request timeout | the same as "
    "C7 |\n"
    "| `producer-restart-resend` | C9 | idempotence; producers crash with sends in flight (5% of "
    "ops) and the application re-sends what was unknown | kill-leader |\n"
    "| `txn` | C10 | transactions over 3 partitions, 20% aborted; a read_committed consumer | "
    "kill-leader, pause |\n"
    "| `eos-copier` | C11 | consume-transform-produce copiers that crash before commit | "
    "kill-leader |\n"
    "| `txn-jepsen` | KAFKA-17754 | Jepsen's KAFKA-17754 recipe: transactions over 3 partitions "
    "with a 1 s transaction timeout (the coordinator looks every second), 1 s delivery and 3 s "
    "request timeouts, an abort after any error; producers in processes of their own | pause of "
    "the transaction coordinator or a leader, 2.5 s latency on its client links, client-pause; 4 "
    "s each |\n"
    "| `eos-failover` | C11 | eos-copier's copiers, 20% crash before commit, with librdkafka's "
    "debug log; one partition each for __consumer_offsets and __transaction_state | kill of the "
    "group coordinator or the transaction coordinator |\n"
    "| `leader-epoch` | C12 | acks=all, min.isr 2 | kill-leader and bounce of the leader, 3 s "
    "apart |\n"
    "| `hw-visibility` | C13 | acks=1, min.isr 1, consumers reading during the run | partition: "
    "isolate the leader (isolate-leader) |\n"
    "| `auto-commit` | C16 | group, auto-commit, crashes before processing | kill-leader |\n"
    "| `commit-after-process` | C17 | group, commit after processing, crashes before the commit "
    "| kill-leader |\n"
    "| `rebalance` | C18 | group, commit after processing; members leave and rejoin, and stall "
    "past max.poll.interval.ms | kill-leader |\n"
    "| `commit-before-process` | C19 | group, commit before processing, crashes before "
    "processing | kill-leader |\n"
    "| `txn-delayed-produce` | KAFKA-17754 | transactions, half of them aborted without waiting "
    "for their sends, 2 s request timeout; a read_committed consumer | pause and a 3 s latency "
    "on the client links of a partition leader |\n"
    "| `txn-cycles` | cycles | transactions over 3 partitions that read their partitions "
    "read_uncommitted before they end (txn_poll), 10% aborted; a read_uncommitted consumer | "
    "kill-leader |\n"
    "| `power-loss` | C14 | acks=all, idempotence, RF 3, min.isr 2, Kafka's default flush "
    "(never); brokers on kt-lazyfs (cluster.storage writeback) | power-loss of all brokers at "
    "once, 1 s down and 15 s up |\n"
    "| `power-loss-fsync` | C14-fsync | the same with flush.messages=1 on the topic | the same "
    "as C14 |\n"
    "| `disk-full` | disk | acks=all, idempotence, RF 3, min.isr 2; brokers on kt-lazyfs | "
    "disk-full on the leader or a random broker, 5 s full and 10 s free |\n"
    "| `clock-txn` | clock-txn | transactions over 3 partitions held open 2 s, 20% aborted, 60 s "
    "transaction timeout; one transaction coordinator, which looks for timed-out transactions "
    "every second; brokers on libfaketime (cluster.clock faketime) | clock: the coordinator's "
    "wall clock +120 s, then -120 s, 8 s each |\n"
    "| `clock-retention` | clock-retention | acks=all, idempotence; retention.ms 10 min, "
    "segment.ms 5 s; brokers on libfaketime | clock: the leader's wall clock +1 h for 8 s |\n"
    "| `power-loss-one` | power-1 | acks=all, idempotence, RF 3, min.isr 2; brokers on kt-lazyfs "
    "| power-loss of the leader or a random broker, one at a time, 12 s apart |\n"
    "| `corrupt` | corrupt | acks=all, idempotence, RF 3, min.isr 2 | corrupt: the leader or a "
    "random broker killed, its active segment's tail bit-flipped or truncated in turn, "
    "restarted; 12 s apart |\n"
    "| `last-replica` | KIP-966 | acks=all, idempotence, RF 3, min.isr 2, no unclean election, "
    "one partition; replica.lag.time.max.ms 5 s; brokers on kt-lazyfs | last-replica-power-loss: "
    "ISR shrunk to the leader, the leader's power lost, the followers back; 20 s to elect |\n"
    "| `reassign` | reassign | acks=all, idempotence, RF 2 of 3 brokers, min.isr 2, no unclean "
    "election | reassign (a replica moved to the broker that held none) and kill-leader, "
    "interleaved |\n"
    "| `remove-broker` | remove-broker | acks=all, idempotence, RF 3 of 4 brokers, min.isr 2, "
    "no unclean election; a dynamic KRaft quorum | remove-broker: a broker's replicas moved to "
    "brokers that held none, the broker stopped and unregistered; a fresh node in its place "
    "(empty storage, a new voter replica), its replicas moved back |\n"
    "| `packet` | packet | acks=all, idempotence, 5 in flight, RF 3, min.isr 2 | packet: 20% of "
    "what the leader or a random broker sends lost, duplicated or held back 20 ms (reordered), one"
    " kind per fault |\n"
    "| `voter-change` | voter | acks=all, idempotence, RF 3, min.isr 2; a dynamic KRaft quorum "
    "(KIP-853, cluster.quorum dynamic) | a network partition, and inside it voter-change (the "
    "quorum leader or another voter removed, then added back before the partition heals) |\n"
    "| `fence-txn-id` | fence-txn-id | transactions over 3 partitions, 10% aborted; a "
    "read_committed consumer | fence-txn-id: another producer's init_transactions with a "
    "running producer's transactional.id, which fences it |"
)

EXPECTED_PLANNED = ()
