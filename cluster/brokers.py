"""A broker container and its Toxiproxy sidecar, with the process verbs."""

from __future__ import annotations

from dataclasses import dataclass

from docker.errors import NotFound
from docker.models.containers import Container
from kafka_trial.cluster.toxiproxy import ToxiproxyClient


@dataclass
class Broker:
    node_id: int
    container: Container
    sidecar: Container
    toxi: ToxiproxyClient
    client_ports: tuple[int, ...]  # host port of each client lane

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
        self.container.kill(signal="SIGKILL")

    def stop(self, timeout_s: int = 30) -> None:
        self.container.stop(timeout=timeout_s)

    def start(self) -> None:
        if self.status() == "paused":
            self.container.unpause()
        elif self.status() != "running":
            self.container.start()

    def pause(self) -> None:
        self.container.pause()

    def resume(self) -> None:
        if self.status() == "paused":
            self.container.unpause()

    def log_paths(self) -> dict[str, Container]:
        return {
            f"kafka-{self.node_id}.log": self.container,
            f"proxy-{self.node_id}.log": self.sidecar,
        }
