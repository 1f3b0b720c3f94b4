"""A run's config, from a file, a preset and flags, into a RunSpec (defined with the
other run-directory contracts in kafka_trial.contracts.spec), with every problem named
in the config's own words: its key, its line, and the flag that set it."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

# Their packages check what a spec names: the fault packages and the anomaly types.
import kafka_trial.checkers
import kafka_trial.nemesis  # noqa: F401
import yaml
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.spec import RunSpec, read_spec
from pydantic import BaseModel, ValidationError

__all__ = ["RunSpec", "build_spec", "load_spec", "merge_config", "read_saved_spec"]


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
    return read_spec(run_dir)
