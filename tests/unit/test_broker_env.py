"""What each broker's container is started with, from the cluster's settings."""

from __future__ import annotations

from kafka_trial.cluster.provision import Provisioner
from kafka_trial.cluster.settings import BROKER_JVM_OPTS, ClusterSpec


def _env(spec: ClusterSpec) -> dict[str, str]:
    return Provisioner(None, spec, None, "r")._broker_env(1, "cid", [9092])  # type: ignore[arg-type]


def test_brokers_compile_with_c1_only_unless_told_otherwise() -> None:
    assert BROKER_JVM_OPTS == "-XX:TieredStopAtLevel=1"
    assert _env(ClusterSpec())["KAFKA_OPTS"] == BROKER_JVM_OPTS
    assert _env(ClusterSpec(broker_jvm_opts="-XX:+UseParallelGC"))["KAFKA_OPTS"] == (
        "-XX:+UseParallelGC"
    )
    # Empty: the JVM's own JIT, and no KAFKA_OPTS at all (the image's own then applies).
    assert "KAFKA_OPTS" not in _env(ClusterSpec(broker_jvm_opts=""))
