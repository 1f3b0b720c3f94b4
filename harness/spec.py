"""The one frozen config object that describes a whole run (Jepsen's test map).

Each stage owns its settings model; RunSpec composes them. It is saved as
RUN_DIR/spec.json, and `analyze` and `report` read it back from there.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

import yaml
from kafka_trial.checkers.settings import CheckSpec
from kafka_trial.cluster.settings import ClientSpec, ClusterSpec, TopicSpec
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.settings import Frozen
from kafka_trial.nemesis.catalog import PACKAGES, kind_refusal, toxic_refusal
from kafka_trial.nemesis.schedule import min_duration_s
from kafka_trial.nemesis.settings import NemesisSpec
from kafka_trial.workloads.settings import (
    AppSpec,
    ConsumerSpec,
    CopierSpec,
    DrainSpec,
    ProducerSpec,
)
from pydantic import BaseModel, Field, ValidationError, model_validator


class RunSpec(Frozen):
    name: str = Field("default", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    seed: int = 0
    duration_s: float = Field(60.0, gt=0, description="length of the fault phase")
    runs_dir: str = "runs"
    cluster: ClusterSpec = ClusterSpec()
    client: ClientSpec = ClientSpec()
    topic: TopicSpec = TopicSpec()
    producer: ProducerSpec = ProducerSpec()
    consumer: ConsumerSpec = ConsumerSpec()
    copier: CopierSpec = CopierSpec()
    app: AppSpec = AppSpec()
    nemesis: NemesisSpec = NemesisSpec()
    drain: DrainSpec = DrainSpec()
    check: CheckSpec = CheckSpec()

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
    def _kind_can_make_the_faults(self) -> RunSpec:
        kind = self.cluster.kind
        refused = {f: kind_refusal(f, kind) for f in self.nemesis.faults}
        refused = {f: why for f, why in refused.items() if why}
        if refused:
            first, why = next(iter(refused.items()))
            raise ValueError(
                f"nemesis.faults {', '.join(refused)} cannot act on cluster.kind {kind} "
                f"({first}: {why}); leave them out (--nemesis none runs no fault)"
            )
        uses_toxic = {"degrade", "slow-follower"} & set(self.nemesis.faults)
        why_not = toxic_refusal(self.nemesis.degrade.type, kind) if uses_toxic else None
        if why_not:
            raise ValueError(f"nemesis.degrade.type {self.nemesis.degrade.type}: {why_not}")
        if kind == "ssh" and "clock" in self.nemesis.faults and self.nemesis.clock.strobe_ms:
            raise ValueError(
                "nemesis.clock.strobe_ms needs the Docker kind's libfaketime; on cluster.kind "
                "ssh a clock fault is a bump (strobe_ms: 0)"
            )
        if kind != "docker" and self.app.image is not None:
            raise ValueError(
                f"app.image runs on the Docker kind's network; on cluster.kind {kind} give "
                "the app as a command (--app-command)"
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
        docker = self.cluster.kind == "docker"
        on_writeback = [f for f in self.nemesis.faults if PACKAGES[f].storage == "writeback"]
        if docker and on_writeback and self.cluster.storage != "writeback":
            # Plain volumes keep what a killed broker wrote: the fault would do nothing.
            raise ValueError(
                f"nemesis.faults {', '.join(on_writeback)} act on the brokers' write-back "
                "filesystem, which cluster.storage=plain has not; set cluster.storage: "
                "writeback"
            )
        on_faketime = [f for f in self.nemesis.faults if PACKAGES[f].clock == "faketime"]
        if docker and on_faketime and self.cluster.clock != "faketime":
            raise ValueError(
                f"nemesis.faults {', '.join(on_faketime)} act on the brokers' clocks, which "
                "cluster.clock=real leaves to the host; set cluster.clock: faketime"
            )
        if "client-pause" in self.nemesis.faults and not self.producer.own_process:
            # Clients that are threads of the harness cannot be frozen alone.
            raise ValueError(
                "nemesis.faults client-pause freezes client processes, and this run has "
                "none; set producer.own_process: true (with producer.transactional: true)"
            )
        if self.nemesis.target_partition >= self.topic.partitions:
            raise ValueError("nemesis.target_partition must be below topic.partitions")
        shortest = min_duration_s(self.nemesis)
        if self.duration_s < shortest:
            # Asked for faults, it would inject none: a VALID verdict would mean nothing.
            raise ValueError(
                f"duration_s={self.duration_s:g} is too short for nemesis.faults "
                f"({', '.join(self.nemesis.faults)}): the first fault starts after "
                f"nemesis.quiet_s={self.nemesis.quiet_s:g} and lasts "
                f"nemesis.fault_s={self.nemesis.fault_s:g}, so the shortest duration_s "
                f"that injects every fault is {shortest:g}"
            )
        return self

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)


def _app_present(app: object) -> bool:
    if isinstance(app, AppSpec):
        return app.present
    return isinstance(app, dict) and any(app.get(k) is not None for k in ("command", "image"))


def merge_config(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge_config(out[k], v)
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


_KEY = re.compile(r"\b[a-z_]+(?:\.[a-z_]+)*(?==|\b)")


def _keys_of(err: dict[str, Any], known: set[str]) -> list[str]:
    """The config keys a problem is about: where it is, or (for a check across keys)
    the keys its message names."""
    where = ".".join(str(p) for p in err["loc"])
    named = list(dict.fromkeys(k for k in _KEY.findall(str(err["msg"])) if k in known))
    if where:
        # A check across a section's keys (app) names the keys it is about.
        return [k for k in named if k.startswith(f"{where}.")] or [where]
    return named


def _fix(keys: list[str], typed: dict[str, str]) -> str:
    """Name each key as the user gave it: the flags they typed first, then the keys
    of the config file."""
    if not keys:
        return "correct the values named above in the config file or their flags"
    flags = [typed[k] for k in keys if k in typed]
    rest = [k for k in keys if k not in typed]
    if not flags:
        return "correct " + ", ".join(rest) + " in the config file or its command-line flag"
    return "correct " + ", ".join(flags) + (f" (or {', '.join(rest)})" if rest else "")


def _as_typed(text: str, typed: dict[str, str]) -> str:
    """The problem in the user's words: `duration_s=10` reads `--duration 10` when the
    value came from that flag."""
    for key, flag in sorted(typed.items(), key=lambda kv: -len(kv[0])):
        if flag.startswith("--set "):
            continue  # the user typed the key itself
        text = re.sub(rf"(?<![\w.]){re.escape(key)}=", f"{flag} ", text)
        text = re.sub(rf"(?<![\w.-]){re.escape(key)}(?![\w.=])", f"{flag} ({key})", text)
    return text


def _all_keys(model: type[BaseModel] | None = None, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for name, field in (model or RunSpec).model_fields.items():
        out.add(prefix + name)
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out |= _all_keys(ann, f"{prefix}{name}.")
    return out


def build_spec(
    data: dict[str, Any],
    source: str = "config",
    lines: dict[tuple[str, ...], int] | None = None,
    typed: dict[str, str] | None = None,
) -> RunSpec:
    """Validate raw config. Every problem is named at once, in one line: the key, its
    line in the config file when known, and what is wrong with it; the fix names the
    flag the user typed for a key set by a flag (`typed`: key -> flag)."""
    try:
        return RunSpec.model_validate(data)
    except ValidationError as e:
        errors = [dict(err) for err in e.errors()]
        parts = []
        for err in errors:
            text = _explain(err)
            line = (lines or {}).get(tuple(str(p) for p in err["loc"]))
            parts.append(f"{text} (line {line})" if line else text)
        known = _all_keys()
        keys = list(dict.fromkeys(k for err in errors for k in _keys_of(err, known)))
        if len(errors) == 1:
            problem = f"bad {source} value: {parts[0]}"
        else:
            problem = f"{len(errors)} bad {source} values: " + "; ".join(parts)
        raise TrialError(_as_typed(problem, typed or {}), _fix(keys, typed or {})) from None


def load_spec(
    path: str | Path | None,
    overrides: dict[str, Any] | None = None,
    base: dict[str, Any] | None = None,
    typed: dict[str, str] | None = None,
) -> RunSpec:
    """base (a preset) < the config file < overrides (flags); `typed`: the flag that
    set each overridden key, for error messages."""
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
    merged = merge_config(merge_config(base or {}, data), overrides or {})
    return build_spec(merged, source=str(path or "flag"), lines=lines, typed=typed)


def read_saved_spec(run_dir: Path) -> RunSpec:
    p = run_dir / "spec.json"
    if not p.is_file():
        raise TrialError(f"{p} is missing", "point at a directory written by `kafka-trial run`")
    return build_spec(json.loads(p.read_text()), source=str(p))
