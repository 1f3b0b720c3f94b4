"""The application on trial as a workload: the user's program, unmodified, between the
run's topic (written by the producers, so every other check still judges it) and
TOPIC-out (docs/apps.md is the contract).

Its phases, in the session's order:
- topics(): TOPIC-out, created before the run.
- workers(): none; it takes one client lane per instance, after the other
  workloads' lanes, so a link fault on a lane reaches the app as it does a client.
- start(ctx), before the producers: each instance started with its environment,
  then refused at once (TrialError) if one exits within `start_check_s`; a
  supervisor then keeps every instance running (app_supervisor.py).
- finish(ctx), after the final heal: wait until it has caught up (app_catch_up.py),
  record `app-caught-up`, stop every instance, record its group's offsets.
- drain_own(): TOPIC-out is drained here, role "app-output", each record's value the
  input id it carries (app_ids.py), not by the session's generic drain.
- close(): on every path, every instance killed and unregistered.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kafka_trial.cluster.control import LaneControl
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.app_contract import ManagedAppInstance
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.group_ids import GROUP_IDS
from kafka_trial.contracts.log import activity, log
from kafka_trial.workloads.app_catch_up import CatchUp, wait_caught_up
from kafka_trial.workloads.app_groups import GroupBook
from kafka_trial.workloads.app_ids import id_parser
from kafka_trial.workloads.app_process import (
    MARKER_ENV,
    AppLogs,
    ProcessInstance,
    start_process,
    substitute,
)
from kafka_trial.workloads.app_supervisor import AppSupervisor, EarlyExit
from kafka_trial.workloads.base import ClientContext, Lane, Worker
from kafka_trial.workloads.drain import DrainResult, drain
from kafka_trial.workloads.group_consumer import record_group_offsets
from kafka_trial.workloads.settings import APP_ENV_NAMES, AppSpec, ConsumerSpec, DrainSpec

# Starts one container of the app (cluster/app_containers.start_app_container with the
# engine client and the cluster bound): keywords image, name, env, lane, out_path,
# err_path, index, stop_grace_s; returns an AppContainer.
ContainerStarter = Callable[..., Any]


@dataclass(frozen=True)
class AppPlacement:
    """Where the run's cluster is, as the instances need it: its client lanes (to cut
    one instance off, app-partition) and how to start a container (app.image)."""

    lanes: LaneControl | None = None
    containers: ContainerStarter | None = None


class InstanceRunner(Protocol):
    """Starts one instance of the app: a process group on the host, or a container."""

    def start(
        self, index: int, lane: Lane, env: dict[str, str], logs: AppLogs
    ) -> ManagedAppInstance: ...


@dataclass(frozen=True)
class CommandRunner:
    command: str
    book: GroupBook
    lanes: LaneControl | None = None

    def start(
        self, index: int, lane: Lane, env: dict[str, str], logs: AppLogs
    ) -> ManagedAppInstance:
        cmd = substitute(self.command, {k: env[k] for k in APP_ENV_NAMES})
        inst = start_process(index, cmd, env, logs, lane.index, self.lanes)
        self.book.started(index, inst.pid, cmd, env[MARKER_ENV])
        return inst


@dataclass(eq=False)
class ContainerInstance:
    """An AppContainer (cluster/app_containers.py) as the supervisor and the faults
    see an instance: what each action did, with which container."""

    c: Any
    index: int

    def describe(self) -> dict[str, Any]:
        return dict(self.c.describe())

    def running(self) -> bool:
        return bool(self.c.running())

    def exit_code(self) -> int | None:
        code = self.c.exit_code()
        return None if code is None else int(code)

    def ended_by(self) -> str | None:
        by = self.c.ended_by
        return None if by is None else str(by)

    def stderr_tail(self) -> str:
        lines = [ln.strip() for ln in str(self.c.stderr_tail()).splitlines() if ln.strip()]
        return lines[-1][:300] if lines else ""

    def kill(self, by: str) -> dict[str, Any]:
        return {**self.describe(), **self.c.kill(by)}

    def terminate(self, by: str) -> dict[str, Any]:
        return {**self.describe(), **self.c.terminate(by)}

    def pause(self) -> dict[str, Any]:
        return {**self.describe(), **self.c.pause()}

    def resume(self) -> dict[str, Any]:
        return {**self.describe(), **self.c.resume()}

    def cut(self) -> dict[str, Any]:
        return {**self.describe(), **self.c.cut()}

    def uncut(self) -> dict[str, Any]:
        return {**self.describe(), **self.c.uncut()}

    def close(self) -> None:
        # A kill first: remove() alone would stop it gracefully, up to stop_grace_s for
        # each instance, on a path (an error, SIGTERM) that must end quickly.
        with contextlib.suppress(Exception):
            if self.c.running():
                self.c.kill(self.c.ended_by or "harness")
        with contextlib.suppress(Exception):
            self.c.remove()  # keeps its logs


@dataclass(frozen=True)
class ImageRunner:
    image: str
    containers: ContainerStarter
    stop_grace_s: float

    def start(
        self, index: int, lane: Lane, env: dict[str, str], logs: AppLogs
    ) -> ManagedAppInstance:
        c = self.containers(
            image=self.image,
            name="app",
            env=env,
            lane=lane.index,
            out_path=logs.out,
            err_path=logs.err,
            index=index,
            stop_grace_s=self.stop_grace_s,
        )
        return ContainerInstance(c, index)


class AppWorkload:
    name = "app"

    def __init__(
        self,
        spec: AppSpec,
        source: TopicSpec,
        placement: AppPlacement | None = None,
        runner: InstanceRunner | None = None,
    ) -> None:
        self.spec = spec
        self.source = source
        self.placement = placement or AppPlacement()
        self.runner = runner
        self.parse = id_parser(spec.id_json, spec.id_regex)
        self._lanes: list[Lane] = []
        self.supervisor: AppSupervisor | None = None
        self.book: GroupBook | None = None
        self.log_dir: Path | None = None
        self.caught: CatchUp | None = None
        self._group = ""
        self._group_live = False  # registered for the group-coordinator role

    @property
    def sink(self) -> TopicSpec:
        return self.source.model_copy(update={"name": f"{self.source.name}-out"})

    def group_id(self, ctx: ClientContext) -> str:
        return f"kafka-trial-app-{ctx.run_id}"

    def join_s(self) -> float:
        return 0.0

    def topics(self) -> tuple[TopicSpec, ...]:
        return (self.sink,)

    def workers(self, ctx: ClientContext, lanes: Callable[[], Lane]) -> list[Worker]:
        self._lanes = [lanes() for _ in range(self.spec.instances)]
        return []

    def environment(self, ctx: ClientContext, index: int, lane: Lane) -> dict[str, str]:
        return {
            **self.spec.env,
            "KAFKA_BOOTSTRAP_SERVERS": lane.bootstrap,
            "INPUT_TOPIC": self.source.name,
            "OUTPUT_TOPIC": self.sink.name,
            "GROUP_ID": self.group_id(ctx),
            "INSTANCE_ID": str(index),
            MARKER_ENV: f"{ctx.run_id}-{index}",
        }

    def _runner(self, ctx: ClientContext, log_dir: Path) -> InstanceRunner:
        if self.runner is not None:
            return self.runner
        if self.spec.image is not None:
            if self.placement.containers is None:
                raise TrialError(
                    f"app.image {self.spec.image} needs a cluster to start containers on",
                    "run it with `kafka-trial run --app-image` (or put_on_trial), which "
                    "has one; a session of your own can put a command on trial",
                )
            return ImageRunner(self.spec.image, self.placement.containers, self.spec.stop_grace_s)
        assert self.spec.command is not None
        self.book = GroupBook(log_dir / "instances.json", ctx.run_id)
        return CommandRunner(self.spec.command, self.book, self.placement.lanes)

    def start(self, ctx: ClientContext) -> None:
        """Start every instance, and refuse an app whose instance exits at once."""
        base = ctx.run_dir if ctx.run_dir is not None else Path(tempfile.mkdtemp("-kt"))
        log_dir = self.log_dir = base / "app"
        log_dir.mkdir(parents=True, exist_ok=True)
        self._group = self.group_id(ctx)
        n = self.spec.instances
        lanes = self._lanes or [Lane.of(ctx, i) for i in range(n)]
        runner = self._runner(ctx, log_dir)

        def start_one(i: int) -> ManagedAppInstance:
            logs = AppLogs(log_dir / f"instance-{i}.out", log_dir / f"instance-{i}.err")
            return runner.start(i, lanes[i], self.environment(ctx, i, lanes[i]), logs)

        book = self.book
        self.supervisor = AppSupervisor(
            ctx.history,
            start_one,
            n,
            self.spec.restart_delay_s,
            ctx.abort,
            on_exit=lambda inst: (
                book.ended(inst.pid) if book and isinstance(inst, ProcessInstance) else None
            ),
        )
        log(f"starting {n} instance(s) of the app; their output goes to {log_dir}")
        self.supervisor.start_all()
        early = self.supervisor.early_exit(self.spec.start_check_s)
        if early is not None:
            self.close()
            raise self._refusal(early, log_dir)
        self.supervisor.supervise()
        # The group-coordinator role aims at the app's group's coordinator meanwhile.
        GROUP_IDS.register(self._group, "app")
        self._group_live = True

    def _refusal(self, early: EarlyExit, log_dir: Path) -> TrialError:
        i = early.index
        if isinstance(early.error, TrialError):
            return early.error  # it says what to fix itself (an image not held locally)
        what = self.spec.command or f"the image {self.spec.image}"
        if early.exit_code is None:
            problem = f"app instance {i} did not start: {early.why}"
        else:
            problem = (
                f"app instance {i} exited at once (exit code {early.exit_code}): "
                f"{early.why or 'it wrote nothing to stderr'}"
            )
        return TrialError(
            problem,
            f"run {what} by hand with the environment docs/apps.md lists; its output is "
            f"in {log_dir / f'instance-{i}.err'}",
        )

    def finish(self, ctx: ClientContext) -> None:
        """After the heal: wait for it to catch up, stop it, record its offsets."""
        sup = self.supervisor
        if sup is None:
            # `kafka-trial finish` of a cut-off run: its instances died with it (or were
            # killed as leftovers); what their group committed still bounds the checks.
            self._group = self.group_id(ctx)
            record_group_offsets(ctx, self.source, self._group, ConsumerSpec(), role="app")
            return
        process = ctx.pids.next()
        ctx.history.invoke(process, "app-caught-up", {})
        try:
            with activity("waiting for the app to catch up"):
                caught = wait_caught_up(
                    ctx,
                    self.source,
                    self.sink,
                    self._group,
                    self.spec.quiet_s,
                    self.spec.catch_up_s,
                )
        except Exception as e:  # the op is unknown; the app is stopped all the same
            ctx.history.complete("info", process, "app-caught-up", {}, f"{type(e).__name__}: {e}")
        else:
            self.caught = caught
            ctx.history.complete("ok", process, "app-caught-up", caught.to_value())
            if not caught.caught_up:
                behind = sum(caught.lag.values())
                log(f"the app did not catch up ({caught.how}): {behind} input offsets behind")
        sup.stop(self.spec.stop_grace_s)
        # The group reads read_committed, whatever the run's consumers do.
        record_group_offsets(ctx, self.source, self._group, ConsumerSpec(), role="app")

    def drain_own(
        self, ctx: ClientContext, topic: TopicSpec, settings: DrainSpec
    ) -> DrainResult | None:
        """The output topic's drain: its records' values are the ids they carry."""
        if topic.name != self.sink.name:
            return None
        return drain(ctx, topic, settings, role="app-output", value_of=self.parse)

    def close(self) -> None:
        """Every path's end (also an error, SIGTERM or the cluster gone): nothing of
        the app keeps running."""
        if self._group_live:
            GROUP_IDS.unregister(self._group)
            self._group_live = False
        if self.supervisor is not None:
            self.supervisor.close()
        if self.book is not None:
            self.book.close()

    def summary(self) -> dict[str, Any]:
        """What the app did, for run.json."""
        out: dict[str, Any] = {
            "mode": "image" if self.spec.image is not None else "command",
            "group": self._group or None,
            "output_topic": self.sink.name,
            "logs": str(self.log_dir) if self.log_dir is not None else None,
        }
        if self.supervisor is not None:
            out.update(self.supervisor.summary())
        out["caught_up"] = self.caught.to_value() if self.caught is not None else None
        return out
