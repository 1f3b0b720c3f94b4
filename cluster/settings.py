"""The cluster's settings (the `cluster`, `client` and `topic` sections of spec.json),
defined with the other run-directory contracts; this path is the public one."""

from kafka_trial.contracts.spec.cluster import (
    BROKER_JVM_OPTS,
    DEFAULT_BROKER_CONFIG,
    MIN_KRAFT_VERSION,
    ClientSpec,
    ClusterSpec,
    TopicSpec,
)

__all__ = [
    "BROKER_JVM_OPTS",
    "DEFAULT_BROKER_CONFIG",
    "MIN_KRAFT_VERSION",
    "ClientSpec",
    "ClusterSpec",
    "TopicSpec",
]
