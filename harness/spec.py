"""The one frozen config object that describes a whole run (Jepsen's test map).

Each stage owns its settings model; RunSpec composes them. It is saved as
RUN_DIR/spec.json, and `analyze` and `report` read it back from there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from kafka_trial.checkers.settings import CheckSpec
from kafka_trial.cluster.settings import ClusterSpec, TopicSpec
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.settings import Frozen
from kafka_trial.nemesis.settings import NemesisSpec
from kafka_trial.workloads.settings import ConsumerSpec, CopierSpec, DrainSpec, ProducerSpec
from pydantic import Field, ValidationError, model_validator


class RunSpec(Frozen):
    name: str = Field("default", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    seed: int = 0
    duration_s: float = Field(60.0, gt=0, description="length of the fault phase")
    runs_dir: str = "runs"
    cluster: ClusterSpec = ClusterSpec()
    topic: TopicSpec = TopicSpec()
    producer: ProducerSpec = ProducerSpec()
    consumer: ConsumerSpec = ConsumerSpec()
    copier: CopierSpec = CopierSpec()
    nemesis: NemesisSpec = NemesisSpec()
    drain: DrainSpec = DrainSpec()
    check: CheckSpec = CheckSpec()

    @model_validator(mode="after")
    def _fits_cluster(self) -> RunSpec:
        if self.topic.replication_factor > self.cluster.brokers:
            raise ValueError(
                f"topic.replication_factor={self.topic.replication_factor} exceeds "
                f"cluster.brokers={self.cluster.brokers}; lower it or add brokers"
            )
        if self.topic.min_insync_replicas > self.topic.replication_factor:
            raise ValueError("topic.min_insync_replicas exceeds topic.replication_factor")
        if self.nemesis.target_partition >= self.topic.partitions:
            raise ValueError("nemesis.target_partition must be below topic.partitions")
        return self

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def build_spec(data: dict[str, Any], source: str = "config") -> RunSpec:
    """Validate raw config; a bad value becomes one line naming the field and the fix."""
    try:
        return RunSpec.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        msg = first["msg"].removeprefix("Value error, ")
        raise TrialError(
            f"bad {source} value at {where}: {msg}",
            f"correct {where} in the config file or its command-line flag",
        ) from None


def load_spec(
    path: str | Path | None,
    overrides: dict[str, Any] | None = None,
    base: dict[str, Any] | None = None,
) -> RunSpec:
    """base (a preset) < the config file < overrides (flags)."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise TrialError(f"config file {p} does not exist", "pass an existing YAML/JSON file")
        try:
            loaded = yaml.safe_load(p.read_text())
        except yaml.YAMLError as e:
            first = str(e).splitlines()[0]
            raise TrialError(
                f"config file {p} is not valid YAML/JSON: {first}", "fix its syntax"
            ) from None
        if loaded is not None and not isinstance(loaded, dict):
            raise TrialError(f"config file {p} must hold a mapping", "write key: value pairs")
        data = loaded or {}
    merged = _merge(_merge(base or {}, data), overrides or {})
    return build_spec(merged, source=str(path or "flag"))


def read_saved_spec(run_dir: Path) -> RunSpec:
    p = run_dir / "spec.json"
    if not p.is_file():
        raise TrialError(f"{p} is missing", "point at a directory written by `kafka-trial run`")
    return build_spec(json.loads(p.read_text()), source=str(p))
