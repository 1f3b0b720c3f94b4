"""run.json: what a run was and how it went, filled in phase by phase by the runner.

Read back by `kafka-trial finish` (which adds the drain keys of a run that stopped
before its drain), by a campaign (warm_cluster, phases) and by the report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunRecord:
    kafka_version: str
    kafka_image: str
    toxiproxy_image: str
    cluster_run_id: str  # the cluster's; on a warm cluster not the clients' run id
    warm_cluster: bool
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

    @property
    def send_ops(self) -> int:
        return int((self.drain_summary or {}).get("send_ops", 0))

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
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)
