"""The nodes of a cluster kafka-trial did not build (`cluster.kind: ssh`), as an
inventory file names them: how to reach each node over SSH, how its broker is
started, stopped and found, where it keeps its data and logs, and the addresses
its peers and clients use. Jepsen's nodes file, with what Kafka needs added."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.settings import Frozen
from pydantic import Field, ValidationError, model_validator


class NodePorts(Frozen):
    """The broker's listeners on the node: what link faults match on."""

    client: int = Field(9092, ge=1, le=65535, description="the listener clients use")
    internal: int = Field(9093, ge=1, le=65535, description="the replication listener")
    controller: int = Field(9094, ge=1, le=65535, description="the KRaft controller listener")


class Node(Frozen):
    node_id: int = Field(ge=0, description="the broker's node.id")
    host: str = Field(description="where SSH reaches the node")
    ssh_port: int = Field(22, ge=1, le=65535)
    user: str = "root"
    key: str | None = Field(None, description="private key file; unset: the SSH agent's keys")
    sudo: bool = Field(False, description="run fault commands with sudo -n (not needed as root)")
    address: str = Field(
        description="the node's address as its peers see it: what partitions match on"
    )
    interface: str = Field("eth0", description="the interface packet faults shape")
    ports: NodePorts = NodePorts()
    systemd_unit: str | None = Field(None, description="start and stop with systemctl")
    start: str | None = Field(None, description="a command that starts the broker")
    stop: str | None = Field(None, description="a command that stops it (SIGTERM)")
    pgrep: str = Field("kafka\\.Kafka", description="pgrep -f pattern of the broker's JVM")
    data_dirs: tuple[str, ...] = Field(("/var/lib/kafka/data",), min_length=1)
    metadata_dir: str | None = Field(
        None, description="metadata.log.dir, if not the first data directory"
    )
    log_files: tuple[str, ...] = Field((), description="the broker's log files, collected")
    clock: bool = Field(
        False,
        description="the node may have its wall clock set (date -s): a node of its own, "
        "not a container that shares the host's clock",
    )

    @model_validator(mode="after")
    def _how_to_start(self) -> Node:
        if self.systemd_unit is None and (self.start is None or self.stop is None):
            raise ValueError(
                f"node {self.node_id}: give systemd_unit, or both start and stop commands"
            )
        return self

    @property
    def label(self) -> str:
        return f"node {self.node_id} ({self.user}@{self.host}:{self.ssh_port})"

    def start_command(self) -> str:
        return f"systemctl start {self.systemd_unit}" if self.systemd_unit else str(self.start)

    def stop_command(self) -> str:
        return f"systemctl stop {self.systemd_unit}" if self.systemd_unit else str(self.stop)


class Inventory(Frozen):
    bootstrap: str = Field(description="HOST:PORT[,HOST:PORT...] the harness's clients use")
    nodes: tuple[Node, ...] = Field(min_length=1)
    connect_timeout_s: float = Field(10.0, gt=0)
    packet_faults: Literal["auto", "netem", "iptables"] = Field(
        "auto",
        description="auto: netem where the node's kernel has it, else iptables and tbf",
    )

    @model_validator(mode="after")
    def _unique_ids(self) -> Inventory:
        ids = [n.node_id for n in self.nodes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"node ids repeat: {ids}; each node names its own node.id")
        return self

    def node(self, node_id: int) -> Node:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(node_id)

    @property
    def node_ids(self) -> list[int]:
        return sorted(n.node_id for n in self.nodes)


def load_inventory(path: str | Path) -> Inventory:
    """The inventory at `path`, or one line on what is wrong with it."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except OSError as e:
        raise TrialError(
            f"cannot read the inventory {p}: {e.strerror}", "give --inventory an inventory file"
        ) from None
    except yaml.YAMLError as e:
        raise TrialError(f"the inventory {p} is not YAML: {e}", "fix its syntax") from None
    try:
        inv = Inventory.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(top)"
        raise TrialError(
            f"the inventory {p}: {where}: {first['msg']}",
            "see docs/clusters.md for the inventory's fields",
        ) from None
    # Relative key paths are relative to the inventory, as a user writing it expects.
    nodes = tuple(
        n.model_copy(update={"key": str((p.parent / n.key).resolve())})
        if n.key and not Path(n.key).is_absolute()
        else n
        for n in inv.nodes
    )
    return inv.model_copy(update={"nodes": nodes})
