"""The one frozen config object that describes a whole run (Jepsen's test map).

Each stage owns its settings model; RunSpec composes them. It is saved as
RUN_DIR/spec.json, and `analyze` and `report` read it back from there.
"""

from __future__ import annotations

import difflib
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
from pydantic import BaseModel, Field, ValidationError, model_validator


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


# Pydantic's wording, in the words of a config file.
_PHRASES = (
    ("Value error, ", ""),
    ("Input should be a valid tuple", "must be a list"),
    ("Input should be a valid list", "must be a list"),
    ("Input should be a valid dictionary or instance of ", "must be a mapping of "),
    (
        "Input should be a valid integer, unable to parse string as an integer",
        "must be a whole number",
    ),
    ("Input should be a valid integer", "must be a whole number"),
    ("Input should be a valid number, unable to parse string as a number", "must be a number"),
    ("Input should be a valid boolean, unable to interpret input", "must be true or false"),
    ("Input should be a valid string", "must be text"),
    ("Input should be ", "must be "),
    ("Field required", "is required"),
)


def _wording(err: dict[str, Any]) -> str:
    msg = str(err["msg"])
    for a, b in _PHRASES:
        msg = msg.replace(a, b)
    return msg


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The settings model that holds the key at `loc` (RunSpec for top-level keys)."""
    model: type[BaseModel] = RunSpec
    for key in loc[:-1]:
        field = model.model_fields.get(str(key))
        ann = field.annotation if field is not None else None
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return None
        model = ann
    return model


def _explain(err: dict[str, Any]) -> str:
    loc = tuple(err["loc"])
    where = ".".join(str(p) for p in loc) or "(top level)"
    if err["type"] == "extra_forbidden":
        model = _model_at(loc)
        known = list(model.model_fields) if model else []
        close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
        hint = f" (did you mean {'.'.join([*map(str, loc[:-1]), close[0]])}?)" if close else ""
        return f"unknown key {where}{hint}"
    if not err["loc"]:
        return _wording(err)
    return f"{where}: {_wording(err)}"


def yaml_lines(text: str) -> dict[tuple[str, ...], int]:
    """The 1-based line of every key path in a YAML mapping, so an error can say where."""
    out: dict[tuple[str, ...], int] = {}
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return out

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = (*path, str(k.value))
                out[key] = k.start_mark.line + 1
                walk(v, key)

    walk(root, ())
    return out


def build_spec(
    data: dict[str, Any], source: str = "config", lines: dict[tuple[str, ...], int] | None = None
) -> RunSpec:
    """Validate raw config. Every problem is named at once, in one line: the key, its
    line in the config file when known, and what is wrong with it."""
    try:
        return RunSpec.model_validate(data)
    except ValidationError as e:
        errors = e.errors()
        parts = []
        for err in errors:
            text = _explain(dict(err))
            line = (lines or {}).get(tuple(str(p) for p in err["loc"]))
            parts.append(f"{text} (line {line})" if line else text)
        where = ".".join(str(p) for p in errors[0]["loc"]) or "(top level)"
        if len(errors) == 1:
            problem = f"bad {source} value: {parts[0]}"
            fix = f"correct {where} in the config file or its command-line flag"
        else:
            problem = f"{len(errors)} bad {source} values: " + "; ".join(parts)
            fix = "correct each key named above in the config file or its command-line flag"
        raise TrialError(problem, fix) from None


def load_spec(
    path: str | Path | None,
    overrides: dict[str, Any] | None = None,
    base: dict[str, Any] | None = None,
) -> RunSpec:
    """base (a preset) < the config file < overrides (flags)."""
    data: dict[str, Any] = {}
    lines: dict[tuple[str, ...], int] = {}
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
        lines = yaml_lines(p.read_text())
    merged = _merge(_merge(base or {}, data), overrides or {})
    return build_spec(merged, source=str(path or "flag"), lines=lines)


def read_saved_spec(run_dir: Path) -> RunSpec:
    p = run_dir / "spec.json"
    if not p.is_file():
        raise TrialError(f"{p} is missing", "point at a directory written by `kafka-trial run`")
    return build_spec(json.loads(p.read_text()), source=str(p))
