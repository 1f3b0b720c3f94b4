from __future__ import annotations

from pathlib import Path

from confluent_kafka import KafkaError
from kafka_trial.workloads.outcomes import classify, render_markdown

DOCS = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


def test_success_is_ok() -> None:
    assert classify(None, single_attempt=False) == "ok"
    assert classify(KafkaError.NO_ERROR, single_attempt=True) == "ok"


def test_timeouts_are_never_fail() -> None:
    for code in (KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT):
        assert classify(code, single_attempt=True) == "info"
        assert classify(code, single_attempt=False) == "info"


def test_not_leader_is_info_kafka_13574() -> None:
    assert classify(KafkaError.NOT_LEADER_FOR_PARTITION, single_attempt=True) == "info"


def test_definite_rejections_are_fail() -> None:
    assert classify(KafkaError.MSG_SIZE_TOO_LARGE, single_attempt=False) == "fail"
    assert classify(KafkaError._PURGE_QUEUE, single_attempt=False) == "fail"


def test_purged_in_flight_is_info() -> None:
    assert classify(KafkaError._PURGE_INFLIGHT, single_attempt=True) == "info"


def test_pre_append_rejection_depends_on_retries() -> None:
    # The final error reports only the last attempt; earlier ones may have landed.
    assert classify(KafkaError.NOT_ENOUGH_REPLICAS, single_attempt=True) == "fail"
    assert classify(KafkaError.NOT_ENOUGH_REPLICAS, single_attempt=False) == "info"


def test_after_append_is_info() -> None:
    assert classify(KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, single_attempt=True) == "info"


def test_unlisted_codes_are_info() -> None:
    assert classify(KafkaError.UNKNOWN, single_attempt=True) == "info"
    assert classify(-12345, single_attempt=True) == "info"


def test_docs_table_matches_code() -> None:
    assert DOCS.read_text() == render_markdown(), "regenerate docs/errors.md from render_markdown()"
