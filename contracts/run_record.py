"""RUN_DIR/run.json: what a run was and how it went, filled in phase by phase by the
runner (docs/run-directory.md).

Read back by `kafka-trial finish` (which adds the drain keys of a run that stopped
before its drain), by a campaign (warm_cluster, phases) and by the report. It grows
only by addition: every key is optional on reading, so a file an older version
wrote (or a run that stopped early) loads, and keys this version does not know are
kept when `finish` writes the file again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from kafka_trial.contracts.run_files import load_json
from pydantic import TypeAdapter

RUN_FILE = "run.json"

# SessionSummary.to_dict()'s keys, at run.json's top level: the drains (`drain`, then
# `drain_output`, or `drain:<topic>` for a third topic) and the counts after them.
_DRAIN_COUNTS = ("send_ops", "values_acked", "client_events")


@dataclass(frozen=True)
class FinishedBy:
    """A run whose drain `kafka-trial finish` did: where it took the history up."""

    command: str
    resumed_at_index: int
    ops_completed_info: int
    cut_line: int | None = None


@dataclass
class RunRecord:
    # Empty in a file written by a run that failed before it had a cluster.
    kafka_version: str = ""
    kafka_image: str = ""
    toxiproxy_image: str = ""
    cluster_run_id: str = ""  # the cluster's; on a warm cluster not the clients' run id
    warm_cluster: bool = False
    phases: dict[str, float] = field(default_factory=dict)  # seconds, in phase order
    ops_per_s: float = 0.0  # send ops during the load phase
    # SessionSummary.to_dict(), at the top level of run.json (drain, send_ops, ...):
    # None until the drain is done, and `finish` takes its absence to mean "not done".
    drain_summary: dict[str, Any] | None = None
    faults: int | None = None  # from here on, None: the drain was not reached
    history_ops: int | None = None
    history_ops_per_s: float | None = None
    values_acked_per_s: float | None = None
    failed_phase: str | None = None  # the phase an exception (or Ctrl-C) ended the run in
    # When the fault phase started, on the history's clock (ns): schedule.json's at_s
    # count from here, and so do the report's times. None: the phase never started.
    fault_phase_start_ns: int | None = None
    error: str | None = None  # the exception, when one ended it
    # The application on trial (app.command or app.image): its starts, exits by whom,
    # crash loops and catch-up (AppWorkload.summary); written whatever ended the run.
    app: dict[str, Any] | None = None
    # docker, ssh (the user's nodes) or bootstrap (observer mode); run.json names the
    # kind only when it is not docker, so a Docker run's file is as it always was.
    cluster_kind: str = "docker"
    finished_by: FinishedBy | None = None
    # Keys a later version wrote, kept as they were when this one writes the file.
    unknown: dict[str, Any] = field(default_factory=dict)

    @property
    def send_ops(self) -> int:
        return int((self.drain_summary or {}).get("send_ops", 0))

    @property
    def drained(self) -> bool:
        return self.drain_summary is not None and "drain" in self.drain_summary

    def to_dict(self) -> dict[str, Any]:
        """run.json's keys, in the order the runner always wrote them."""
        out: dict[str, Any] = {
            "kafka_version": self.kafka_version,
            "kafka_image": self.kafka_image,
            "toxiproxy_image": self.toxiproxy_image,
            "cluster_run_id": self.cluster_run_id,
            "warm_cluster": self.warm_cluster,
        }
        if self.cluster_kind != "docker":
            out["cluster_kind"] = self.cluster_kind
        if self.drain_summary is not None:
            out.update(self.drain_summary)
        if self.faults is not None:
            out["faults"] = self.faults
        if self.history_ops is not None:
            out["history_ops"] = self.history_ops
        if self.history_ops_per_s is not None:
            out["history_ops_per_s"] = round(self.history_ops_per_s, 1)
        if self.values_acked_per_s is not None:
            out["values_acked_per_s"] = round(self.values_acked_per_s, 1)
        out["phases"] = self.phases
        out["ops_per_s"] = round(self.ops_per_s, 1)
        if self.failed_phase is not None:
            out["failed_phase"] = self.failed_phase
        if self.fault_phase_start_ns is not None:
            out["fault_phase_start_ns"] = self.fault_phase_start_ns
        if self.error is not None:
            out["error"] = self.error
        if self.app is not None:
            out["app"] = self.app
        if self.finished_by is not None:
            out["finished_by"] = {
                f.name: getattr(self.finished_by, f.name) for f in fields(FinishedBy)
            }
        out.update(self.unknown)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def write(self, run_dir: Path) -> None:
        (run_dir / RUN_FILE).write_text(self.to_json())

    @staticmethod
    def failed_early(phase: str, error: BaseException) -> str:
        """run.json of a run that failed before it had a cluster: where and why only."""
        return json.dumps(
            {"failed_phase": phase, "error": f"{type(error).__name__}: {error}"[:500]}
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        known = {f.name for f in fields(cls)} - {"drain_summary", "unknown"}
        drain = {
            k: v
            for k, v in data.items()
            if k in ("drain", "drain_output") or k.startswith("drain:") or k in _DRAIN_COUNTS
        }
        unknown = {k: v for k, v in data.items() if k not in known and k not in drain}
        own = {k: v for k, v in data.items() if k in known}
        return _ADAPTER.validate_python({**own, "drain_summary": drain or None, "unknown": unknown})

    @classmethod
    def read(cls, run_dir: Path) -> RunRecord:
        """RUN_DIR/run.json, or one TrialError line naming what to do instead."""
        return load_json(run_dir / RUN_FILE, cls._parse, "a run record", _FIX.format(run_dir))

    @classmethod
    def _parse(cls, data: Any) -> RunRecord:
        if not isinstance(data, dict):
            raise ValueError("not a mapping of keys")
        return cls.from_dict(data)


_ADAPTER = TypeAdapter(RunRecord)
_FIX = "`kafka-trial finish {0}` completes a run that stopped before its drain; else re-run it"
