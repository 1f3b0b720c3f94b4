"""Load a page in real headless Chromium (Debian's package) and report what a person
and the network would see: the DOM after load, console messages, the requests the
page made, and a screenshot."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kafka_trial.cluster.host import apt_install

# Without the background-networking flags Chromium's own traffic (updates, time,
# accounts) fills the net log; it is told apart below by its isolation key anyway.
_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
]


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        apt_install("chromium")
        found = shutil.which("chromium")
    assert found is not None, "chromium did not install"
    return found


@dataclass(frozen=True)
class Loaded:
    dom: str
    console: list[str]  # every console message the page logged (CSP refusals included)
    requests: list[str]  # every non-file, non-data URL the page asked for


def _page_requests(net_log: Path) -> list[str]:
    """URLs the page fetched: requests keyed to the file:// page's site, which
    Chromium's own background requests are not."""
    log = json.loads(net_log.read_text())
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    urls: dict[int, str] = {}
    out: list[str] = []
    for e in log["events"]:
        p = e.get("params") or {}
        sid = e["source"]["id"]
        if "url" in p:
            urls.setdefault(sid, p["url"])
        if types.get(e["type"]) == "URL_REQUEST_START_JOB" and "file://" in str(
            p.get("network_isolation_key", "")
        ):
            url = p.get("url") or urls.get(sid, "")
            if not url.startswith(("file:", "data:")):
                out.append(url)
    return out


def load(page: Path, screenshot: Path | None = None, height: int = 3000) -> Loaded:
    exe = chromium()
    with tempfile.TemporaryDirectory() as tmp:
        net = Path(tmp) / "net.json"
        cmd = [
            exe,
            *_FLAGS,
            f"--user-data-dir={tmp}/profile",
            f"--log-net-log={net}",
            f"--window-size=1200,{height}",
        ]
        url = page.resolve().as_uri()
        done = subprocess.run(
            [*cmd, "--dump-dom", url], capture_output=True, text=True, timeout=600
        )
        console = [ln for ln in done.stderr.splitlines() if ":CONSOLE" in ln]
        requests = _page_requests(net) if net.is_file() else ["(no net log written)"]
        if screenshot is not None:
            subprocess.run(
                [*cmd, f"--screenshot={screenshot}", url],
                capture_output=True,
                timeout=300,
                check=True,
            )
    return Loaded(done.stdout, console, requests)
