"""Names, labels and ports: how kafka-trial's containers and proxies are found.

Every container, network and volume carries labels naming its run and its owner
process, so leftovers of a crashed run can be told from a live run's.
"""

from __future__ import annotations

import os
import socket
import uuid
from base64 import urlsafe_b64encode

from kafka_trial.cluster.control import LinkKind

LABEL = "kafka-trial"
LABEL_RUN = "kafka-trial.run"
LABEL_PID = "kafka-trial.owner-pid"
LABEL_HOST = "kafka-trial.owner-host"
LABEL_ROLE = "kafka-trial.role"
LABEL_NODE = "kafka-trial.node"
LABEL_APP = "kafka-trial.app-instance"  # the index of an instance of the app on trial

CLIENT_PORT = 9092
INTERNAL_PORT = 9093
CONTROLLER_PORT = 9094
CLIENT_PROXY_PORT = 19092
CLIENT_LANE_BASE = 9200
INTERNAL_PROXY_BASE = 19100
CONTROLLER_PROXY_BASE = 19200
API_PORT = 8474
QUORUM_STATE = "/var/lib/kafka/data/__cluster_metadata-0/quorum-state"

CUT_TOXICS = ("kt-cut-up", "kt-cut-down")


def proxy_name(dst: int, kind: LinkKind, lane: int = 0) -> str:
    if kind == "client":
        return "client" if lane == 0 else f"client-{lane}"
    return f"to-{dst}-{kind}"


def client_listener(lane: int) -> tuple[str, int, int]:
    """(listener name, broker port, sidecar container port) of a client lane.

    Each lane is its own listener, advertised at its own host port, so one client
    (a lane) can be cut off a broker while the others still reach it."""
    if lane == 0:
        return "CLIENT", CLIENT_PORT, CLIENT_PROXY_PORT
    return f"CLIENT{lane}", CLIENT_LANE_BASE + lane, CLIENT_PROXY_PORT + lane


def cluster_id() -> str:
    # A leading '-' would read as an option to kafka-storage in other images' scripts.
    while True:
        cid = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def labels(run_id: str, role: str, node: int | None = None) -> dict[str, str]:
    out = {
        LABEL: "1",
        LABEL_RUN: run_id,
        LABEL_PID: str(os.getpid()),
        LABEL_HOST: socket.gethostname(),
        LABEL_ROLE: role,
    }
    if node is not None:
        out[LABEL_NODE] = str(node)
    return out
