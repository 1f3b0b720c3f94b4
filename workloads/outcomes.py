"""The one table that maps a confluent-kafka error to an op outcome.

The rule: `fail` only when librdkafka or Kafka guarantees the record was not
written; everything else that is not a success is `info` (unknown). A timeout is
never `fail` (librdkafka documents _MSG_TIMED_OUT as "possibly persisted"), and
NotLeaderOrFollower may follow a successful append (KAFKA-13574).

Some broker rejections happen before the append (NOT_ENOUGH_REPLICAS, ...), but
the final error of a retried message reports only its last attempt: an earlier
attempt may have timed out after being written. Those codes are `fail` only
when the producer makes a single attempt (retries=0), and `info` otherwise.
docs/errors.md renders this table; a unit test keeps the two in step.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from confluent_kafka import KafkaError

Outcome = Literal["ok", "fail", "info"]


class Certainty(Enum):
    NEVER_WRITTEN = "fail"
    NEVER_WRITTEN_IF_SINGLE_ATTEMPT = "fail if retries=0, else info"


# Rejected before anything reached a log, whatever happened to earlier attempts:
# the request itself is invalid or unauthorised, or it never left the client.
_NEVER_WRITTEN = {
    KafkaError._PURGE_QUEUE: "purged from the local queue before transmission",
    KafkaError._QUEUE_FULL: "local queue full; produce() refused it",
    KafkaError._MSG_TIMED_OUT_QUEUE
    if hasattr(KafkaError, "_MSG_TIMED_OUT_QUEUE")
    else KafkaError._TIMED_OUT_QUEUE: "timed out in the local queue, never sent",
    KafkaError._UNKNOWN_TOPIC: "topic unknown to the client; never sent",
    KafkaError._UNKNOWN_PARTITION: "partition unknown to the client; never sent",
    KafkaError._INVALID_ARG: "invalid argument to produce(); never sent",
    KafkaError._KEY_SERIALIZATION: "serialisation failed before sending",
    KafkaError._VALUE_SERIALIZATION: "serialisation failed before sending",
    KafkaError.MSG_SIZE_TOO_LARGE: "record larger than allowed; rejected every time",
    KafkaError.RECORD_LIST_TOO_LARGE: "batch larger than allowed; rejected every time",
    KafkaError.INVALID_MSG: "corrupt record (CRC); rejected before append",
    KafkaError.INVALID_MSG_SIZE: "invalid record size; rejected before append",
    KafkaError.INVALID_RECORD: "record failed broker validation; rejected before append",
    KafkaError.INVALID_REQUIRED_ACKS: "invalid acks; rejected before append",
    KafkaError.INVALID_TIMESTAMP: "timestamp out of range; rejected before append",
    KafkaError.UNSUPPORTED_FOR_MESSAGE_FORMAT: "format unsupported; rejected before append",
    KafkaError.UNSUPPORTED_COMPRESSION_TYPE: "compression unsupported; rejected before append",
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "not authorised to write the topic",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "not authorised (cluster)",
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "not authorised (transactional id)",
}

# Rejected before the append by this attempt; earlier attempts may have landed.
_NEVER_WRITTEN_IF_SINGLE_ATTEMPT = {
    KafkaError.NOT_ENOUGH_REPLICAS: "ISR below min.insync.replicas; checked before append",
    KafkaError.UNKNOWN_TOPIC_OR_PART: "broker does not host the partition",
    KafkaError.LEADER_NOT_AVAILABLE: "no leader to append",
    KafkaError.INVALID_PRODUCER_EPOCH: "producer fenced by epoch; rejected before append",
    KafkaError.PRODUCER_FENCED: "producer fenced; rejected before append",
    KafkaError.THROTTLING_QUOTA_EXCEEDED: "throttled; rejected before append",
}

# Named here only to document why they are `info`; any unlisted code is `info` too.
INFO_EXAMPLES = {
    KafkaError._MSG_TIMED_OUT: "delivery timeout: possibly persisted (librdkafka)",
    KafkaError._TIMED_OUT: "request timed out: possibly persisted",
    KafkaError.REQUEST_TIMED_OUT: "broker timed out waiting for replication after append",
    KafkaError.NOT_LEADER_FOR_PARTITION: "NotLeaderOrFollower: may follow an append (KAFKA-13574)",
    KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND: "written to the leader, not replicated",
    KafkaError.NETWORK_EXCEPTION: "connection lost with the request in flight",
    KafkaError._TRANSPORT: "connection lost with the request in flight",
    KafkaError._PURGE_INFLIGHT: "purged while in flight: possibly persisted",
    KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER: "idempotence sequence gap: state unknown",
    KafkaError.KAFKA_STORAGE_ERROR: "broker storage failure during append",
    KafkaError._FATAL: "fatal producer error: in-flight state unknown",
}


def classify(code: int | None, single_attempt: bool) -> Outcome:
    """Outcome of a delivery report or produce() error; code None means success."""
    if code is None or code == KafkaError.NO_ERROR:
        return "ok"
    if code in _NEVER_WRITTEN:
        return "fail"
    if code in _NEVER_WRITTEN_IF_SINGLE_ATTEMPT:
        return "fail" if single_attempt else "info"
    return "info"


def table() -> list[tuple[str, str, str]]:
    """(error name, outcome, reason) for every listed code, for docs/errors.md."""

    def name(code: int) -> str:
        return KafkaError(code).name()

    rows = [(name(c), "fail", why) for c, why in _NEVER_WRITTEN.items()]
    rows += [
        (name(c), Certainty.NEVER_WRITTEN_IF_SINGLE_ATTEMPT.value, why)
        for c, why in _NEVER_WRITTEN_IF_SINGLE_ATTEMPT.items()
    ]
    rows += [(name(c), "info", why) for c, why in INFO_EXAMPLES.items()]
    return rows


def render_markdown() -> str:
    head = (
        "# Error → outcome table\n\n"
        "Generated from `workloads/outcomes.py` (a unit test keeps this file in step).\n"
        "Rule: an error is `fail` only when the record is guaranteed not written; any\n"
        "error not listed here is `info`. A timeout is never `fail`.\n\n"
        "| error | outcome | why |\n|---|---|---|\n"
    )
    return head + "".join(f"| `{n}` | {o} | {w} |\n" for n, o, w in table())
