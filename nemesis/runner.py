"""Carries out a seeded schedule through the nemesis, then heals everything."""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kafka_trial.contracts.log import log
from kafka_trial.nemesis.core import Nemesis
from kafka_trial.nemesis.schedule import Step


@dataclass
class NemesisRunner:
    nemesis: Nemesis
    steps: list[Step]
    stop: threading.Event
    faults_done: int = 0
    _t0: float = field(default_factory=time.monotonic)
    _last_change: float | None = None  # when a fault or heal last ended; None: none ran

    def calm_s(self) -> float | None:
        """Seconds since the last fault or heal ended; None if no fault was applied."""
        return None if self._last_change is None else time.monotonic() - self._last_change

    def run(self) -> None:
        # The schedule's times count from the start of the fault phase, not from when
        # the runner was built (before the cluster started).
        self._t0 = time.monotonic()
        for i, step in enumerate(self.steps):
            delay = self._t0 + step.at_s - time.monotonic()
            if (delay > 0 and self.stop.wait(delay)) or self.stop.is_set():
                # Stopped with faults on (a heal due at the very end of the phase, or
                # a fault that overran it): heal them now, so the clients' quiet spell
                # and their last ops run on a whole cluster instead of waiting out
                # their delivery timeouts against a fault nobody would undo.
                for rest in self.steps[i:]:
                    if rest.action == "heal" and self.nemesis.heal(rest.package):
                        self._last_change = time.monotonic()
                self._say_not_run(self.steps[i:])
                return
            if step.action == "fault":
                # Counted only if it took effect: a run must not claim faults it lacked.
                if self.nemesis.apply(step.package, step.pick).ok:
                    self.faults_done += 1
            else:
                self.nemesis.heal(step.package)
            self._last_change = time.monotonic()

    def _say_not_run(self, rest: list[Step]) -> None:
        """The faults the phase ended before: one op each, so that the history, the
        report and the fault count agree on what the run did not get."""
        late_s = round(time.monotonic() - self._t0, 1)
        for step in rest:
            if step.action != "fault":
                continue
            # Overrun: its time had come, and what ran before it held the runner;
            # otherwise the run was stopped early (an interrupt, a failed workload).
            why = (
                "what ran before it took that long"
                if step.at_s <= late_s
                else "the run was stopped before it was due"
            )
            self.nemesis.not_run(
                step.package,
                {"pick": step.pick, "at_s": step.at_s},
                f"the fault phase ended ({late_s} s in) before this fault, due at "
                f"{step.at_s} s, was started: {why}",
            )

    def final_heal(self, topic: str, timeout_s: float) -> dict[str, Any]:
        """Undo every outstanding fault, heal every link and broker, wait for health."""
        self.nemesis.heal_all()
        cluster = self.nemesis.cluster
        health: dict[str, Any] = {}

        def healthy_within(budget_s: float) -> None:
            t0 = time.monotonic()
            cluster.await_registered(budget_s)
            if not cluster.await_in_sync(topic, max(1.0, budget_s - (time.monotonic() - t0))):
                raise RuntimeError(f"{topic} not fully in sync within {budget_s:.0f}s")

        def await_healthy() -> dict[str, Any]:
            t0 = time.monotonic()
            try:
                healthy_within(timeout_s)
            except Exception as e:
                # A broker whose process hit a fatal error can sit in its shutdown for
                # minutes with its container running, or exit after heal-all ran:
                # once, the brokers not registered and unfenced are restarted, and
                # heal-all starts what has exited since and ends what has begun to
                # exit (which it tells from the broker itself: with a majority of the
                # voters so, no controller answers the first question).
                stuck = _stuck_brokers(cluster)
                health["restarted"] = stuck
                health["why"] = f"{type(e).__name__}: {e}"[:300]
                for node in stuck:
                    with contextlib.suppress(Exception):  # it may have exited already
                        cluster.kill_node(node)
                    cluster.start_node(node)
                did = cluster.heal_all() or {}
                if did.get("exiting"):
                    health["exiting"] = did["exiting"]
                healthy_within(timeout_s)
            health["seconds"] = round(time.monotonic() - t0, 3)
            return dict(health)

        ok = self.nemesis.rec.do(
            "await-healthy", {"topic": topic, "timeout_s": timeout_s}, await_healthy
        )
        log("cluster healthy again" if ok else "cluster did not become healthy; draining anyway")
        return {"healthy": ok, **health}


def _stuck_brokers(cluster: Any) -> list[int]:
    """The brokers the controller does not list as registered and unfenced; [] where
    the cluster cannot say (then nothing is restarted)."""
    try:
        registered = cluster.registered_brokers()
    except Exception:  # a kind without the Admin call, or no controller answering
        return []
    # None: listed, by a cluster that lists only unfenced brokers.
    return [n for n in cluster.node_ids if n not in registered or registered[n] is True]
