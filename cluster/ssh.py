"""Commands on a node over SSH (paramiko): one connection per node, kept open for the
run, since a fault's verification takes several commands and a new handshake costs
more than the command. Reconnects once when the connection has dropped, as a node
that was partitioned from the harness's own link may have."""

from __future__ import annotations

import shlex
import threading
from dataclasses import dataclass, field

import paramiko
from kafka_trial.cluster.inventory import Node
from kafka_trial.contracts.errors import TrialError


@dataclass(frozen=True)
class Answer:
    code: int
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.code == 0


class RemoteError(RuntimeError):
    """A command on a node failed: the fault it served did not take effect."""


@dataclass
class Remote:
    node: Node
    connect_timeout_s: float = 10.0
    _client: paramiko.SSHClient | None = field(default=None, init=False, repr=False)
    # paramiko's transport multiplexes channels, but connecting is not thread-safe.
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def connect(self) -> None:
        """Connect, or raise a one-line TrialError naming the node and the fix."""
        n = self.node
        client = paramiko.SSHClient()
        # The harness is pointed at these hosts by the inventory its user wrote; a
        # node rebuilt with new host keys must not stop a run (as Jepsen's own default).
        client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        try:
            client.connect(
                n.host,
                port=n.ssh_port,
                username=n.user,
                key_filename=n.key,
                timeout=self.connect_timeout_s,
                banner_timeout=self.connect_timeout_s,
                auth_timeout=self.connect_timeout_s,
                allow_agent=n.key is None,
                look_for_keys=n.key is None,
            )
        except paramiko.AuthenticationException:
            raise TrialError(
                f"{n.label} refused the key {n.key or '(agent)'}",
                f"add its public key to {n.user}'s authorized_keys on the node, or fix `key`",
            ) from None
        except FileNotFoundError:
            raise TrialError(
                f"{n.label}: the key file {n.key} does not exist", "fix the node's `key`"
            ) from None
        except (OSError, paramiko.SSHException) as e:
            raise TrialError(
                f"{n.label} cannot be reached over SSH: {type(e).__name__}: {e}",
                "check host, ssh_port and that sshd runs on the node",
            ) from None
        self._client = client

    def run(self, command: str, timeout_s: float = 30.0, sudo: bool | None = None) -> Answer:
        """Run `command` with sh on the node; its exit code and output, never raising
        for a non-zero exit (the caller decides what a failure means)."""
        with self._lock:
            if self._client is None or not self._alive():
                self.connect()
            client = self._client
        assert client is not None
        use_sudo = self.node.sudo if sudo is None else sudo
        line = f"sudo -n sh -c {shlex.quote(command)}" if use_sudo else command
        try:
            _, stdout, stderr = client.exec_command(line, timeout=timeout_s)
            out = stdout.read().decode(errors="replace")
            err = stderr.read().decode(errors="replace")
            code = stdout.channel.recv_exit_status()
        except (OSError, paramiko.SSHException) as e:
            self.close()
            raise RemoteError(f"{self.node.label}: `{command}` failed: {e}") from None
        return Answer(code, out, err)

    def check(self, command: str, timeout_s: float = 30.0) -> str:
        """Run `command`; its output, or RemoteError with what it said."""
        a = self.run(command, timeout_s)
        if not a.ok:
            said = (a.err or a.out).strip()[-300:]
            raise RemoteError(f"{self.node.label}: `{command}` exited {a.code}: {said}")
        return a.out

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        """The last `max_bytes` of a file on the node (b'' if it is not there)."""
        a = self.run(f"tail -c {int(max_bytes)} {shlex.quote(path)} 2>/dev/null || true", 60)
        return a.out.encode()

    def _alive(self) -> bool:
        t = self._client.get_transport() if self._client else None
        return bool(t and t.is_active())

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
