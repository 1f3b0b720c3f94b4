"""Run under kafka-trial's pytest plugin (`pytest` in this directory). The unsafe
consumer commits before it processes, so a crash loses orders for the application:
its test fails with `group-missed`. The safe twin commits after processing and
passes, redeliveries allowed."""

from __future__ import annotations

import uuid

from orders_service import consume, produce


def _scenario(kafka_cluster, nemesis, trial_history, commit_before_processing: bool):
    topic = kafka_cluster.create_topic(f"orders-{uuid.uuid4().hex[:6]}", partitions=3, rf=3)
    with nemesis.kill_leader(topic, partition=0):
        produce(kafka_cluster.bootstrap, topic, range(0, 3000), trial_history)
    produce(kafka_cluster.bootstrap, topic, range(3000, 4000), trial_history)
    consume(
        kafka_cluster.bootstrap,
        topic,
        f"g-{uuid.uuid4().hex[:6]}",
        trial_history,
        commit_before_processing,
    )
    trial_history.drain(kafka_cluster, topic)
    return trial_history.check(allow=["group-redelivered"])


def test_commit_before_processing_loses_no_order(kafka_cluster, nemesis, trial_history):
    verdict = _scenario(kafka_cluster, nemesis, trial_history, commit_before_processing=True)
    assert verdict.valid is True, verdict


def test_commit_after_processing_loses_no_order(kafka_cluster, nemesis, trial_history):
    verdict = _scenario(kafka_cluster, nemesis, trial_history, commit_before_processing=False)
    assert verdict.valid is True, verdict
