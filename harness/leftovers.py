"""`kafka-trial heal`: undo faults on clusters that a crashed run left running."""

from __future__ import annotations

import contextlib

from docker.errors import APIError, NotFound

from harness.cluster import API_PORT, LABEL, LABEL_ROLE
from harness.engine import ensure_engine
from harness.toxiproxy import ToxiproxyClient, ToxiproxyError


def heal_leftovers() -> str:
    client = ensure_engine()
    healed_links = resumed = started = 0
    problems: list[str] = []
    for c in client.containers.list(all=True, filters={"label": [LABEL]}):
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
    for c in client.containers.list(all=True, filters={"label": [LABEL]}):
        if c.labels.get(LABEL_ROLE) != "broker":
            continue
        with contextlib.suppress(NotFound, APIError):
            if c.status == "paused":
                c.unpause()
                resumed += 1
            elif c.status in ("exited", "created"):
                c.start()
                started += 1
    msg = (
        f"healed: {healed_links} proxies reset, {resumed} brokers resumed, "
        f"{started} brokers started"
    )
    return msg + ("" if not problems else "; problems: " + "; ".join(problems))
