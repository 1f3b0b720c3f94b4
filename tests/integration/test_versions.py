"""Kafka 3.9.x builds from Maven Central too, and forms a working cluster."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from kafka_trial.cluster.facade import Cluster
from kafka_trial.cluster.images import ensure_images
from kafka_trial.harness.spec import build_spec

import docker


@pytest.mark.slow
def test_kafka_3_9_cluster_round_trip(engine: docker.DockerClient) -> None:
    spec = build_spec({"cluster": {"kafka_version": "3.9"}, "topic": {"partitions": 1}})
    imgs = ensure_images(engine, spec.cluster)
    assert imgs.kafka_version.startswith("3.9.")
    c = Cluster(engine, spec.cluster, imgs)
    try:
        c.start()
        c.await_registered(spec.cluster.startup_timeout_s)
        c.create_topic(spec.topic)
        assert c.await_in_sync(spec.topic.name, 120)
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
        for i in range(20):
            p.produce(spec.topic.name, value=str(i).encode(), partition=0)
        assert p.flush(30) == 0
        cons = Consumer(
            {"bootstrap.servers": c.bootstrap, "group.id": "v39", "auto.offset.reset": "earliest"}
        )
        cons.subscribe([spec.topic.name])
        got: list[int] = []
        for _ in range(60):
            for m in cons.consume(100, 1.0):
                if m.error() is None:
                    got.append(int(m.value()))
            if len(got) >= 20:
                break
        cons.close()
        assert got == list(range(20))
    finally:
        c.teardown()
