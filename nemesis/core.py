"""The nemesis: applies fault packages, records every fault and heal as a history op,
and holds what is outstanding until it is healed.

Only this module records nemesis ops. A fault's heal is data (packages.Heal), so
several faults of one package can be outstanding and each heals exactly what it did.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kafka_trial.cluster.control import ClusterControl
from kafka_trial.contracts.app_contract import APPS
from kafka_trial.contracts.client_processes import CLIENTS
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.nemesis.catalog import NOT_RUN_OP
from kafka_trial.nemesis.packages import build_package
from kafka_trial.nemesis.recorder import NemesisRecorder
from kafka_trial.nemesis.settings import NemesisSpec
from kafka_trial.nemesis.steps import Done, Heal, Package, Unfinished, apply_undo


@dataclass(frozen=True)
class Applied:
    """One fault as it happened: its package, the result of each step (None where the
    step failed), and the heal it left outstanding (None: nothing to undo)."""

    package: str
    results: tuple[dict[str, Any] | None, ...]
    heal: Heal | None

    @property
    def ok(self) -> bool:
        return all(r is not None for r in self.results)


class Nemesis:
    """`Nemesis(cluster, history)`; `apply("kill-leader")`, `heal()`, or
    `with nemesis.during("partition"): ...`, which always heals."""

    def __init__(
        self,
        cluster: ClusterControl,
        history: HistoryWriter | NemesisRecorder,
        settings: NemesisSpec | None = None,
        topic: str = "trial",
        packages: dict[str, Package] | None = None,
    ) -> None:
        self.cluster = cluster
        self.rec = history if isinstance(history, NemesisRecorder) else NemesisRecorder(history)
        self.settings = settings or NemesisSpec()
        self.topic = topic
        self._packages: dict[str, Package] = dict(packages or {})
        self._outstanding: list[Applied] = []
        self._heal_failed: set[int] = set()  # ids of outstanding faults a heal failed on
        self._lock = threading.Lock()

    def package(self, name: str) -> Package:
        if name not in self._packages:
            self._packages[name] = build_package(name, self.settings, self.topic)
        return self._packages[name]

    @property
    def outstanding(self) -> tuple[Applied, ...]:
        with self._lock:
            return tuple(self._outstanding)

    def apply(self, package: str | Package, pick: int = 0) -> Applied:
        """Carry out one fault, recording each of its steps; keep its heal."""
        pkg = self.package(package) if isinstance(package, str) else package
        results: list[dict[str, Any] | None] = []
        heals: list[Heal] = []
        steps = pkg.fault(self.cluster, pick)
        with contextlib.closing(steps):
            for step in steps:
                done: list[Done] = []

                def act(step=step, done=done) -> dict[str, Any]:
                    try:
                        done.append(step.act())
                    except Unfinished as e:
                        if e.heal is not None:  # what it left in force is undone later
                            heals.append(e.heal)
                        raise
                    return done[0].result

                ok = self.rec.do(step.f, step.value, act)
                results.append(done[0].result if ok else None)
                if ok and done[0].heal is not None:
                    heals.append(done[0].heal)
                if not ok and step.needed:
                    break
        if len(heals) > 1:
            raise RuntimeError(f"{pkg.name}: a fault leaves at most one heal, got {len(heals)}")
        applied = Applied(pkg.name, tuple(results), heals[0] if heals else None)
        if applied.heal is not None:
            with self._lock:
                self._outstanding.append(applied)
        return applied

    def not_run(self, package: str, value: dict[str, Any], why: str) -> None:
        """A fault the schedule asked for and that never started: recorded as
        `fault-not-run` with its package, so that no run seems to have had it."""
        self.rec.said(NOT_RUN_OP, {"package": package, **value}, why)

    def heal(self, target: str | Applied | None = None) -> int:
        """Undo outstanding faults, latest first: one record, every fault of one
        package (by name), or everything (None). Returns how many were healed; one
        whose heal failed stays outstanding."""
        with self._lock:
            chosen = [
                a
                for a in self._outstanding
                if target is None
                or a is target
                or (isinstance(target, str) and a.package == target)
            ]
            for a in chosen:
                self._outstanding.remove(a)
        healed = 0
        for a in reversed(chosen):
            h = a.heal
            assert h is not None
            short: list[Unfinished] = []

            def act(h: Heal = h, short: list[Unfinished] = short) -> dict[str, Any]:
                try:
                    return {**h.result, **apply_undo(self.cluster, h.undo)}
                except Unfinished as e:
                    short.append(e)
                    raise

            ok = self.rec.do(h.f, h.value, act)
            if ok or (short and short[0].heal is None):
                # Healed, or stopped short with nothing left in force (a reassignment
                # left to finish, its throttle gone): the op says which.
                healed += 1
                with self._lock:
                    self._heal_failed.discard(id(a))
                continue
            if short:  # what it left in force is all a later heal has to undo
                a = Applied(a.package, a.results, short[0].heal)
            # Not healed as far as anyone knows: still outstanding (a later heal, or the
            # final one, tries again), and shown as a heal that failed.
            with self._lock:
                self._outstanding.append(a)
                self._heal_failed.add(id(a))
        return healed

    def heal_failed(self, applied: Applied) -> bool:
        """Whether the last attempt to heal this fault failed."""
        with self._lock:
            return id(applied) in self._heal_failed

    def heal_all(self) -> bool:
        """Undo what is outstanding, then make every link whole and every node run,
        and no client or app instance frozen or cut off."""
        self.heal()

        def act() -> dict[str, Any]:
            did: dict[str, Any] | None = None
            try:
                did = self.cluster.heal_all()
            finally:
                # A client or an app instance a fault left frozen or cut off (a heal
                # of its own failed) is woken and reconnected, even when a broker's
                # heal failed: none may sit out the drain frozen.
                apps = APPS.heal_all()
                resumed = CLIENTS.resume_all()
            return (
                {"brokers": self.cluster.node_ids}
                | ({"clients": resumed} if resumed else {})
                | ({"apps_healed": apps} if any(apps.values()) else {})
                | (did or {})
            )

        return self.rec.do("heal-all", {}, act)

    @contextlib.contextmanager
    def during(self, package: str | Package, pick: int = 0) -> Iterator[Applied]:
        """The fault for the duration of the block; healed however the block ends."""
        applied = self.apply(package, pick)
        try:
            yield applied
        finally:
            if applied.heal is not None:
                self.heal(applied)
