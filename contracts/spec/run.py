"""The one frozen config object that describes a whole run (Jepsen's test map):
RUN_DIR/spec.json (docs/run-directory.md).

Each stage's settings model is in this package; RunSpec composes them. The runner
saves it as RUN_DIR/spec.json, and `analyze`, `report` and `finish` read it back.
It grows only by addition: a key added later has a default, so an older spec.json
still loads.
"""

from __future__ import annotations

from pathlib import Path

from kafka_trial.contracts.run_files import load_json
from kafka_trial.contracts.settings import Frozen
from kafka_trial.contracts.spec.check import CheckSpec
from kafka_trial.contracts.spec.cluster import ClientSpec, ClusterSpec, TopicSpec
from kafka_trial.contracts.spec.nemesis import NemesisSpec
from kafka_trial.contracts.spec.owners import run_owner_checks
from kafka_trial.contracts.spec.workloads import (
    AppSpec,
    ConsumerSpec,
    CopierSpec,
    DrainSpec,
    ProducerSpec,
)
from pydantic import Field, model_validator

SPEC_FILE = "spec.json"


class RunSpec(Frozen):
    name: str = Field("default", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    seed: int = 0
    # Not infinite: no schedule ends, and spec.json would write it as null.
    duration_s: float = Field(
        60.0, gt=0, allow_inf_nan=False, description="length of the fault phase"
    )
    runs_dir: str = "runs"
    cluster: ClusterSpec = ClusterSpec()
    client: ClientSpec = ClientSpec()
    topic: TopicSpec = TopicSpec()
    producer: ProducerSpec = ProducerSpec()
    consumer: ConsumerSpec = ConsumerSpec()
    copier: CopierSpec = CopierSpec()
    app: AppSpec = AppSpec()
    nemesis: NemesisSpec = Field(default_factory=NemesisSpec)
    drain: DrainSpec = DrainSpec()
    check: CheckSpec = Field(default_factory=CheckSpec)

    @model_validator(mode="before")
    @classmethod
    def _app_keys_by_partition(cls, data: object) -> object:
        # An app's per-key order is judged per input partition: each value is sent
        # to its partition with that partition as its key. Unless the user keyed the
        # sends otherwise (refused in _app_fits).
        if not isinstance(data, dict) or not _app_present(data.get("app")):
            return data
        producer = data.get("producer", {})
        if isinstance(producer, ProducerSpec):
            producer = producer.model_dump()
        if not isinstance(producer, dict) or producer.get("keyed"):
            return data
        return {**data, "producer": {**producer, "partition_keys": True}}

    @model_validator(mode="after")
    def _app_fits(self) -> RunSpec:
        app_faults = [f for f in self.nemesis.faults if f.startswith("app-")]
        if app_faults and not self.app.present:
            raise ValueError(
                f"nemesis.faults {', '.join(app_faults)} act on the application on trial, "
                "and this run has none; set --app-command or --app-image (app.command, "
                "app.image)"
            )
        if not self.app.present:
            return self
        if self.copier.workers:
            raise ValueError(
                f"the app and copier.workers both write {self.topic.name}-out; set "
                "copier.workers: 0 or leave the app out"
            )
        if self.producer.keyed:
            raise ValueError(
                "an app's run sends each value keyed by its partition; remove producer.keyed"
            )
        # Lanes are handed out producers, consumers, then the app's instances, modulo
        # the cluster's: a shared lane would cut the producers off with the instance.
        need = self.producer.clients + self.consumer.workers + self.app.instances
        if "app-partition" in self.nemesis.faults and self.cluster.client_lanes < need:
            raise ValueError(
                "nemesis.faults app-partition cuts one app instance's client lane, which "
                f"cluster.client_lanes={self.cluster.client_lanes} shares with other clients; "
                f"set cluster.client_lanes: {need} (producer.clients + consumer.workers + "
                "app.instances, at most 8)"
            )
        return self

    @model_validator(mode="after")
    def _fits_cluster(self) -> RunSpec:
        if self.topic.replication_factor > self.cluster.brokers:
            raise ValueError(
                f"topic.replication_factor={self.topic.replication_factor} exceeds "
                f"cluster.brokers={self.cluster.brokers}; lower it or add brokers"
            )
        if self.topic.min_insync_replicas > self.topic.replication_factor:
            raise ValueError(
                f"topic.min_insync_replicas={self.topic.min_insync_replicas} exceeds "
                f"topic.replication_factor={self.topic.replication_factor}"
            )
        if "client-pause" in self.nemesis.faults and not self.producer.own_process:
            # Clients that are threads of the harness cannot be frozen alone.
            raise ValueError(
                "nemesis.faults client-pause freezes client processes, and this run has "
                "none; set producer.own_process: true (with producer.transactional: true)"
            )
        if self.nemesis.target_partition >= self.topic.partitions:
            raise ValueError("nemesis.target_partition must be below topic.partitions")
        return self

    @model_validator(mode="after")
    def _owners(self) -> RunSpec:
        # What the cluster's kind can fault, and what each fault package needs of the
        # cluster and of the fault phase's length: the nemesis catalog's to say.
        return run_owner_checks(self, "nemesis")

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    def write(self, run_dir: Path, only_set: bool = False) -> None:
        """RUN_DIR/spec.json; `only_set` keeps only the sections given when the spec
        was built (the pytest plugin's, which holds its `check` section alone)."""
        text = self.model_dump_json(indent=2, exclude_unset=True) if only_set else self.to_json()
        (run_dir / SPEC_FILE).write_text(text)


def _app_present(app: object) -> bool:
    if isinstance(app, AppSpec):
        return app.present
    return isinstance(app, dict) and any(app.get(k) is not None for k in ("command", "image"))


def read_spec(run_dir: Path) -> RunSpec:
    """RUN_DIR/spec.json, or one TrialError line: missing, damaged, or written by a
    version whose keys this one does not know."""
    p = run_dir / SPEC_FILE
    return load_json(
        p,
        RunSpec.model_validate,
        "this version's spec",
        f"point at a directory written by `kafka-trial run`; a spec from another version "
        f"runs again once its keys are fixed: `kafka-trial run --config {p}`",
    )
