"""RUN_DIR/spec.json: the run's settings, one model per stage composed into RunSpec
(docs/run-directory.md). The stage packages re-export their own section's model."""

from kafka_trial.contracts.spec.check import CheckSpec
from kafka_trial.contracts.spec.cluster import ClientSpec, ClusterSpec, TopicSpec
from kafka_trial.contracts.spec.nemesis import (
    ClockSpec,
    DegradeSpec,
    NemesisSpec,
    PacketSpec,
    ReassignSpec,
)
from kafka_trial.contracts.spec.run import SPEC_FILE, RunSpec, read_spec
from kafka_trial.contracts.spec.workloads import (
    AppSpec,
    ConsumerSpec,
    CopierSpec,
    DrainSpec,
    ProducerSpec,
)

__all__ = [
    "SPEC_FILE",
    "AppSpec",
    "CheckSpec",
    "ClientSpec",
    "ClockSpec",
    "ClusterSpec",
    "ConsumerSpec",
    "CopierSpec",
    "DegradeSpec",
    "DrainSpec",
    "NemesisSpec",
    "PacketSpec",
    "ProducerSpec",
    "ReassignSpec",
    "RunSpec",
    "TopicSpec",
    "read_spec",
]
