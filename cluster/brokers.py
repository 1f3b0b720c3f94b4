"""A broker container and its Toxiproxy sidecar, with the process verbs, and the
verb of its write-back filesystem (`fs`, cluster.storage = writeback)."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import tarfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from docker.errors import APIError, NotFound
from docker.models.containers import Container, ExecResult
from kafka_trial.cluster.freezer import unpause
from kafka_trial.cluster.toxiproxy import ToxiproxyClient
from kafka_trial.contracts.errors import TrialError

LAZYFS = "/opt/kafka/bin/kt-lazyfs"
FAKETIME_FILE = "/run/kt-faketime"
STROBE_FLAG = "/run/kt-strobe"  # a strobe runs while it exists
# How long a crash or kill may take to end the container: the filesystem writes back
# what a killed broker wrote (kill) before it unmounts.
EXIT_WAIT_S = 60
# Kafka's shutdown hook runs on a thread of this name (kafka.Kafka): any line from it
# says the JVM has begun to exit, whatever asked it to.
EXIT_HOOK = "[kafka-shutdown-hook]"
# How a thread that ends the JVM says why, before the hook runs (ShutdownableThread).
FATAL = "Stopped due to fatal error"


@dataclass(frozen=True)
class Exiting:
    """A broker whose JVM began to exit and still runs: when (host epoch seconds, from
    the engine's log timestamps, so a faked clock does not move it) and why (the fatal
    error's line where one came first, else the hook's first line)."""

    since: float
    why: str


def _epoch(stamp: str) -> float:
    """An engine timestamp (RFC 3339, nanoseconds, Z) as epoch seconds; 0.0 if none."""
    head, _, frac = stamp.rstrip("Z").partition(".")
    try:
        base = datetime.fromisoformat(head + "+00:00").timestamp()
    except ValueError:
        return 0.0
    return base + (float(f"0.{frac}") if frac.isdigit() else 0.0)


@dataclass
class Broker:
    node_id: int
    container: Container
    sidecar: Container
    toxi: ToxiproxyClient
    client_ports: tuple[int, ...]  # host port of each client lane
    storage: str = "plain"  # cluster.storage: plain, or writeback (kt-lazyfs under the data)
    clock: str = "real"  # cluster.clock: real, or faketime (libfaketime in the JVM)
    # An exec and a pause never overlap: an exec whose process joins the container's
    # cgroup as it freezes sleeps there uninterruptibly, and the engine then holds the
    # container, so its unpause and every inspect hang until that process thaws (seen:
    # the observer's read of quorum-state racing a `pause`, docs/findings.md).
    _engine: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )
    # How far `exiting` has read this run of the container's log: (StartedAt, the last
    # line's engine time, the fatal line seen so far), and what it found.
    _log_read: tuple[str, float, str | None] = field(
        default=("", 0.0, None), init=False, repr=False, compare=False
    )
    _exit_seen: tuple[str, Exiting] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def client_port(self) -> int:
        return self.client_ports[0]

    @property
    def name(self) -> str:
        return self.container.name

    def status(self) -> str:
        try:
            self.container.reload()
        except NotFound:
            return "removed"
        return str(self.container.status)

    def kill(self) -> None:
        """SIGKILL of the broker process; what it wrote stays, as a process crash
        leaves the page cache. On writeback storage the container's first process is
        kt-lazyfs, so it gets SIGUSR1: it SIGKILLs the broker, writes back, and exits
        137 (a SIGKILL of that container would be a power loss, unrecorded). A paused
        writeback broker can only get that SIGKILL: kt-lazyfs is frozen with it."""
        if self.storage == "writeback" and self.status() == "running":
            self.container.kill(signal="SIGUSR1")
            self._await_exit()
            return
        self.container.kill(signal="SIGKILL")

    def _await_exit(self) -> None:
        try:
            self.container.wait(timeout=EXIT_WAIT_S)
        except Exception:  # requests' timeout: the container hangs; end it the hard way
            if self.status() == "running":
                self.container.kill(signal="SIGKILL")

    def await_exit(self, timeout_s: float) -> bool:
        """Whether the container stopped within `timeout_s`."""
        if timeout_s > 0:
            with contextlib.suppress(Exception):  # requests' timeout: still running
                self.container.wait(timeout=timeout_s)
        return self.status() not in ("running", "paused", "restarting")

    def exiting(self) -> Exiting | None:
        """Whether this run of the container's JVM has begun to exit while the container
        still runs, read from its log (only what came since the last look): a broker
        whose own fatal error began its shutdown can wait there for minutes, for a
        controller to approve it, and meanwhile serves nothing."""
        state = self._state()
        if not state.get("Running") or state.get("Paused"):
            return None
        started = str(state.get("StartedAt", ""))
        if self._exit_seen is not None and self._exit_seen[0] == started:
            return self._exit_seen[1]
        read_from, upto, fatal = self._log_read
        if read_from != started:  # a new run: nothing of the last one counts
            upto, fatal = _epoch(started), None
        since = upto
        raw = self.container.logs(
            stdout=True, stderr=True, timestamps=True, **({"since": since} if since > 0 else {})
        )
        for line in raw.decode(errors="replace").splitlines():
            stamp, _, text = line.partition(" ")
            upto = max(upto, _epoch(stamp))
            if fatal is None and FATAL in text:
                fatal = text.strip()[:300]
            if EXIT_HOOK in text:
                found = Exiting(_epoch(stamp), fatal or text.strip()[:300])
                self._exit_seen = (started, found)
                return found
        self._log_read = (started, upto, fatal)
        return None

    def _state(self) -> dict[str, Any]:
        try:
            self.container.reload()
        except NotFound:
            return {}
        state: dict[str, Any] = self.container.attrs.get("State", {})
        return state

    def end_exiting(self, grace_s: float) -> dict[str, Any] | None:
        """A broker found `exiting`: given until `grace_s` after it began to exit, then
        killed; None if it was not exiting. Records when it began, why, and how it
        ended (`exited` by itself, or `killed`)."""
        found = self.exiting()
        if found is None:
            return None
        exited = self.await_exit(found.since + grace_s - time.time())
        if not exited:
            self.kill()
            self.await_exit(EXIT_WAIT_S)
        return {
            "began_s_ago": round(time.time() - found.since, 1),
            "why": found.why,
            "ended": "exited" if exited else "killed",
        }

    def fs(self, command: str) -> dict[str, Any]:
        """One command to the broker's write-back filesystem, answered as a dict:

        - `status`: dirty files and bytes, fsyncs, what was refused or lost so far;
        - `checkpoint`: write everything back (`files`, `bytes` written);
        - `lose-unfsynced [--torn SEED]`: a crash that loses the page cache. The broker
          process is SIGKILLed first, then every file goes back to its content at its
          last fsync (with --torn, a seeded prefix of each file's dirty pages is kept);
          answers `files`, `bytes` and `paths` dropped, and the container has exited
          when this returns (`start` brings the broker back on what was fsynced);
        - `enospc on|off`: refuse writes with ENOSPC; `off` answers `refused_writes`
          and `refused_bytes`.
        """
        if self.storage != "writeback":
            raise TrialError(
                f"broker {self.node_id} has no write-back filesystem (storage {self.storage})",
                "start the cluster with cluster.storage = writeback",
            )
        reply_file = f"/tmp/kt-lazyfs-reply-{uuid.uuid4().hex}.json"
        try:
            res = self._exec([LAZYFS, "ctl", "--reply-file", reply_file, *command.split()])
        except APIError as e:
            raise TrialError(
                f"kt-lazyfs {command!r} on broker {self.node_id}: {e.explanation or e}",
                "the command needs the broker's container running (start it first)",
            ) from None
        lines = res.output.decode(errors="replace").strip().splitlines()
        if not lines:
            # Under load docker exec has ended a quick ctl with exit 0 and its output
            # lost; the answer is in the file ctl wrote before printing it.
            lines = self._read_container_file(reply_file).strip().splitlines()
        try:
            answer: dict[str, Any] = json.loads(lines[-1]) if lines else {}
        except json.JSONDecodeError:
            answer = {"error": lines[-1]}
        if res.exit_code != 0 or "error" in answer or not answer:
            raise TrialError(
                f"kt-lazyfs {command!r} on broker {self.node_id} failed: "
                f"{answer.get('error') or lines or res.exit_code}",
                "see the broker's log (docker logs) for kt-lazyfs's own lines",
            )
        if answer.get("process") == "killed":
            self._await_exit()
        return answer

    def _read_container_file(self, path: str) -> str:
        """A small file's text through Docker's archive API, which also reads an exited
        container (after a crash command); "" when it is not there."""
        try:
            stream, _ = self.container.get_archive(path)
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                member = tar.next()
                f = tar.extractfile(member) if member is not None else None
                return f.read().decode(errors="replace") if f is not None else ""
        except (APIError, NotFound, tarfile.TarError):
            return ""

    def set_clock(self, offset_s: int) -> None:
        """The broker JVM's wall clock offset from now on (libfaketime's file: written
        whole, then renamed, so no call reads half of it)."""
        self._clock_guard()
        res = self._exec(
            [
                "bash",
                "-c",
                # A strobe writes within microseconds of its check of the flag.
                f"rm -f {STROBE_FLAG}; sleep 0.1; "
                f"echo '{offset_s:+d}' > {FAKETIME_FILE}.new && "
                f"mv {FAKETIME_FILE}.new {FAKETIME_FILE}",
            ]
        )
        if res.exit_code != 0:
            raise TrialError(
                f"setting broker {self.node_id}'s clock failed: {res.output.decode()[-200:]}",
                "the broker's container must be running",
            )

    def _clock_guard(self) -> None:
        if self.clock != "faketime":
            raise TrialError(
                f"broker {self.node_id} reads the real clock (cluster.clock {self.clock})",
                "start the cluster with cluster.clock = faketime",
            )

    def strobe_clock(self, offset_s: int, period_ms: int, duration_s: float) -> None:
        """Flip the JVM's clock between `offset_s` and true every `period_ms`, for
        `duration_s` or until `set_clock` (which ends the strobe first). Returns once
        the loop has written its first offset: a detached exec can start seconds late
        on a loaded host, and the caller's measuring window must not begin before it."""
        self._clock_guard()
        p = period_ms / 1000
        f = FAKETIME_FILE
        started = f"{STROBE_FLAG}.started"
        loop = (
            f"touch {STROBE_FLAG}; end=$((SECONDS+{int(duration_s) + 1})); first=1; "
            f"while [[ -e {STROBE_FLAG} ]] && ((SECONDS<end)); do "
            f"echo '{offset_s:+d}' > {f}.s && mv {f}.s {f}; "
            f"((first)) && touch {started}; first=0; sleep {p}; "
            f"[[ -e {STROBE_FLAG} ]] || break; "
            # Over by time, the loop has just written +0: the clock is left true,
            # and no flag says a strobe runs.
            f"echo '+0' > {f}.s && mv {f}.s {f}; sleep {p}; done; rm -f {STROBE_FLAG}"
        )
        # The loop runs on in its own session with no hold on the exec's output, so
        # the exec ends when the loop has begun, not when it ends.
        starter = (
            f"rm -f {started}; setsid bash -c {shlex.quote(loop)} </dev/null >/dev/null 2>&1 & "
            f"for _ in $(seq 100); do [[ -e {started} ]] && exit 0; sleep 0.05; done; exit 3"
        )
        res = self._exec(["bash", "-c", starter])
        if res.exit_code != 0:
            raise TrialError(
                f"broker {self.node_id}'s clock strobe did not start (exit {res.exit_code}): "
                f"{(res.output or b'').decode(errors='replace')[-200:]}",
                "the broker's container must be running",
            )

    def fs_final_status(self) -> dict[str, Any] | None:
        """kt-lazyfs's last `status`, which it logs as it ends: what a broker that has
        gone did to its filesystem (a broker that halts on ENOSPC takes the control
        socket with it). None if this run of the container logged none."""
        tail = self.container.logs(tail=50).decode(errors="replace").splitlines()
        for line in reversed(tail):
            if "kt-lazyfs: final status " in line:
                final: dict[str, Any] = json.loads(line.split("final status ", 1)[1])
                return final
        return None

    def stop(self, timeout_s: int = 30) -> None:
        self.container.stop(timeout=timeout_s)

    def start(self) -> str | None:
        """Running again; the freezer file thawed when the engine could not unpause
        it (freezer.unpause), else None."""
        status = self.status()  # each call asks the engine
        if status == "paused":
            return unpause(self.container)
        if status != "running":
            self.container.start()
        return None

    def pause(self) -> None:
        with self._engine:
            self.container.pause()

    def exec_running(self, cmd: list[str]) -> ExecResult | None:
        """`cmd` in the container if it is running, else None: for readers that run
        beside the faults (the observer), which must never exec into a paused one."""
        with self._engine:
            if self.status() != "running":
                return None
            return self.container.exec_run(cmd)

    def _exec(self, cmd: list[str]) -> ExecResult:
        """`cmd` in the container for a fault's verb: refused, not hung, when the broker
        is paused."""
        with self._engine:
            if self.status() == "paused":
                raise TrialError(
                    f"broker {self.node_id} is paused: nothing can be run in it",
                    "resume it first (its pause's heal)",
                )
            return self.container.exec_run(cmd)

    def resume(self) -> str | None:
        """As `start`, for a paused broker only."""
        if self.status() == "paused":
            return unpause(self.container)
        return None

    def log_paths(self) -> dict[str, Container]:
        return {
            f"kafka-{self.node_id}.log": self.container,
            f"proxy-{self.node_id}.log": self.sidecar,
        }
