"""What crashed runs leave behind: heal it (`kafka-trial heal`) or remove it
(`kafka-trial cleanup`, and before every new cluster).

Everything kafka-trial creates carries labels; a container whose owner process is
gone (or on another host) is a leftover, a live run's is not.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from typing import Any

from confluent_kafka.admin import AdminClient
from docker.errors import APIError, NotFound
from docker.models.containers import Container
from kafka_trial.cluster import netfaults, netns_faults, throttle
from kafka_trial.cluster.engine import ensure_engine
from kafka_trial.cluster.freezer import unpause
from kafka_trial.cluster.naming import (
    API_PORT,
    CLIENT_PROXY_PORT,
    LABEL,
    LABEL_HOST,
    LABEL_PID,
    LABEL_ROLE,
    LABEL_RUN,
)
from kafka_trial.cluster.toxiproxy import ToxiproxyClient, ToxiproxyError
from kafka_trial.contracts.errors import TrialError

import docker

# How long a heal waits for a cluster to answer before it looks for a throttle: a
# broker it has just started needs a while to listen.
THROTTLE_WAIT_S = 45


def owner_alive(labels: dict[str, str]) -> bool:
    if labels.get(LABEL_HOST) != socket.gethostname():
        return False
    try:
        pid = int(labels.get(LABEL_PID, "0"))
    except ValueError:
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _labels_of(obj: Any) -> dict[str, str]:
    labels = getattr(obj, "labels", None)
    return labels if labels is not None else (obj.attrs.get("Labels") or {})


def _ours(objects: list[Any], run: str | None, force: bool) -> Iterator[Any]:
    """Objects to act on: one run's (run=...), everyone's (force), or those whose
    owner is gone."""
    for o in objects:
        if run or force or not owner_alive(_labels_of(o)):
            yield o


def _containers(client: docker.DockerClient, label: str, first: tuple[str, ...]) -> list[Container]:
    """Every container carrying `label` (a key or key=value), those of the roles in
    `first` ahead of the others."""
    found = client.containers.list(all=True, filters={"label": [label]})
    return sorted(found, key=lambda c: c.labels.get(LABEL_ROLE) not in first)


def remove_leftovers(
    client: docker.DockerClient, run: str | None = None, force: bool = False
) -> int:
    """Remove containers, networks and volumes of runs whose owner is gone.

    With `run`, only that run's; with `force`, even those of live owners.
    """
    label = f"{LABEL_RUN}={run}" if run else LABEL
    flt = {"label": [label]}
    removed = 0
    # Brokers and app instances before sidecars: each lives in a sidecar's namespace
    # (provision.py, app_containers.py).
    for c in _ours(_containers(client, label, first=("broker", "app")), run, force):
        with contextlib.suppress(NotFound, APIError):
            if c.status == "paused":
                unpause(c)
        with contextlib.suppress(NotFound):
            c.remove(force=True, v=True)
            removed += 1
    for n in _ours(client.networks.list(filters=flt), run, force):
        with contextlib.suppress(NotFound, APIError):
            n.remove()
            removed += 1
    for v in _ours(client.volumes.list(filters=flt), run, force):
        with contextlib.suppress(NotFound, APIError):
            v.remove(force=True)
            removed += 1
    return removed


def _clear_packet_rules(sidecar: Container, problems: list[str]) -> int:
    """A `packet` fault's rules live in the sidecar's namespace, and so does the
    nfqueue helper of reorder and corrupt: a run killed during one leaves them until
    the sidecar goes. 1 if some were there and are gone."""
    if shutil.which("nsenter") is None or shutil.which("iptables") is None:
        return 0  # no packet fault was ever made from this host
    ns = netns_faults.Namespace(sidecar, 0)
    try:
        rules = ns.run(netfaults.leftovers(netns_faults.INTERFACE), check=False).strip()
        if not rules and not netns_faults.strays(ns):
            return 0
        left = netns_faults.clear(ns).get("left")
    except (TrialError, OSError, subprocess.SubprocessError) as e:
        problems.append(f"{sidecar.name}'s packet rules: {e}")
        return 0
    if left:
        problems.append(f"{sidecar.name}'s packet rules: still there: {left}")
    return 1


def _quiet_logger() -> logging.Logger:
    lg = logging.getLogger("kafka-trial.heal-librdkafka")
    if not lg.handlers:
        lg.addHandler(logging.NullHandler())
    lg.propagate = False
    return lg


def _clear_throttles(bootstraps: dict[str, list[str]], problems: list[str]) -> list[str]:
    """A throttled `reassign` whose run was killed before its heal leaves replication
    throttled: each cluster's throttle configs are deleted through its client proxies
    (lane 0, as the harness reaches it). What had one, per cluster."""
    cleared: list[str] = []
    for run, addresses in sorted(bootstraps.items()):
        admin = AdminClient(
            {
                "bootstrap.servers": ",".join(addresses),
                "socket.timeout.ms": 10000,
                # librdkafka's complaints about brokers still starting are expected.
                "logger": _quiet_logger(),
            }
        )
        try:
            cleared += [f"{run}: {c}" for c in throttle.clear_leftover(admin, THROTTLE_WAIT_S)]
        except Exception as e:  # librdkafka's errors, a timeout, a config still set: said
            problems.append(f"run {run}'s replication throttle not cleared: {e}")
    return cleared


def heal_leftovers(run: str | None = None) -> str:
    """Reset every proxy and resume or start every broker that a run left behind
    (with `run`, that run's only), resume its app instances a pause left frozen
    (a killed one stays down: its supervisor, which started it, is gone), and delete
    a replication throttle a reassignment left."""
    client = ensure_engine()
    healed_links = resumed = started = apps = cleared = 0
    problems: list[str] = []
    bootstraps: dict[str, list[str]] = {}
    label = f"{LABEL_RUN}={run}" if run else LABEL
    # Proxies first: a broker that starts behind a cut link cannot rejoin.
    for c in _containers(client, label, first=("proxy",)):
        role = c.labels.get(LABEL_ROLE)
        if role == "proxy" and c.status == "running":
            ports = (c.attrs.get("NetworkSettings") or {}).get("Ports") or {}
            bind = (ports.get(f"{API_PORT}/tcp") or [{}])[0].get("HostPort")
            if bind:
                try:
                    ToxiproxyClient(f"http://127.0.0.1:{bind}").reset()
                    healed_links += 1
                except ToxiproxyError as e:
                    problems.append(f"{c.name}: {e}")
            cleared += _clear_packet_rules(c, problems)
            client_port = (ports.get(f"{CLIENT_PROXY_PORT}/tcp") or [{}])[0].get("HostPort")
            if client_port and LABEL_RUN in c.labels:
                bootstraps.setdefault(c.labels[LABEL_RUN], []).append(f"127.0.0.1:{client_port}")
        elif role == "broker":
            with contextlib.suppress(NotFound, APIError):
                if c.status == "paused":
                    unpause(c)
                    resumed += 1
                elif c.status in ("exited", "created"):
                    c.start()
                    started += 1
        elif role == "app" and c.status == "paused":
            with contextlib.suppress(NotFound, APIError):
                unpause(c)
                apps += 1
    # After the brokers: one just started is waited for (THROTTLE_WAIT_S).
    unthrottled = _clear_throttles(bootstraps, problems)
    msg = (
        f"healed: {healed_links} proxies reset, {resumed} brokers resumed, "
        f"{started} brokers started"
        + (f", {apps} app instances resumed" if apps else "")
        + (f", packet rules cleared in {cleared} namespaces" if cleared else "")
        + (f", replication throttle deleted ({', '.join(unthrottled)})" if unthrottled else "")
    )
    return msg + ("" if not problems else "; problems: " + "; ".join(problems))
