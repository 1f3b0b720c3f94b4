"""Carries out a schedule against the cluster, then heals everything."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from harness.cluster import Cluster
from harness.log import log
from nemesis.packages import Package
from nemesis.recorder import NemesisRecorder
from nemesis.schedule import Step


@dataclass
class NemesisRunner:
    cluster: Cluster
    rec: NemesisRecorder
    packages: dict[str, Package]
    steps: list[Step]
    stop: threading.Event
    faults_done: int = 0
    _t0: float = field(default_factory=time.monotonic)

    def run(self) -> None:
        for step in self.steps:
            delay = self._t0 + step.at_s - time.monotonic()
            if delay > 0 and self.stop.wait(delay):
                return
            if self.stop.is_set():
                return
            pkg = self.packages[step.package]
            if step.action == "fault":
                pkg.fault(step.pick)
                self.faults_done += 1
            else:
                pkg.heal()

    def final_heal(self, topic: str, timeout_s: float) -> dict[str, Any]:
        """Undo every package, heal every link and broker, wait for a healthy cluster."""
        for pkg in self.packages.values():
            pkg.heal()

        def heal_all() -> dict[str, Any]:
            self.cluster.heal_all()
            return {"brokers": self.cluster.node_ids}

        self.rec.do("heal-all", {}, heal_all)
        health: dict[str, Any] = {}

        def await_healthy() -> dict[str, Any]:
            t0 = time.monotonic()
            self.cluster.await_registered(timeout_s)
            if not self.cluster.await_in_sync(topic, max(1.0, timeout_s - (time.monotonic() - t0))):
                raise RuntimeError(f"{topic} not fully in sync within {timeout_s:.0f}s")
            health["seconds"] = round(time.monotonic() - t0, 3)
            return dict(health)

        ok = self.rec.do("await-healthy", {"topic": topic, "timeout_s": timeout_s}, await_healthy)
        log("cluster healthy again" if ok else "cluster did not become healthy; draining anyway")
        return {"healthy": ok, **health}
