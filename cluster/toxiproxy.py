"""A small typed Toxiproxy HTTP client with timeouts.

toxiproxy-python keeps its server address in class attributes (so it cannot talk
to one sidecar per broker) and sets no timeouts, so we speak the API directly.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Literal

Stream = Literal["upstream", "downstream"]


class ToxiproxyError(RuntimeError):
    pass


@dataclass(frozen=True)
class Toxic:
    name: str
    type: str
    stream: Stream
    attributes: dict[str, Any]
    toxicity: float = 1.0


@dataclass(frozen=True)
class ToxiproxyClient:
    base_url: str  # e.g. http://127.0.0.1:32768
    timeout_s: float = 5.0

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.base_url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"} if data is not None else {},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace").strip()
            raise ToxiproxyError(f"{method} {path}: HTTP {e.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as e:
            raise ToxiproxyError(f"{method} {path}: {e}") from None
        return json.loads(raw) if raw.strip() else None

    def version(self) -> str:
        req = urllib.request.Request(self.base_url + "/version")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return resp.read().decode().strip()
        except (urllib.error.URLError, OSError) as e:
            raise ToxiproxyError(f"GET /version: {e}") from None

    def proxies(self) -> dict[str, dict[str, Any]]:
        return self._call("GET", "/proxies") or {}

    def create_proxy(self, name: str, listen: str, upstream: str) -> None:
        self._call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream})

    def set_enabled(self, name: str, enabled: bool) -> None:
        self._call("POST", f"/proxies/{name}", {"enabled": enabled})

    def add_toxic(self, proxy: str, toxic: Toxic) -> None:
        self._call(
            "POST",
            f"/proxies/{proxy}/toxics",
            {
                "name": toxic.name,
                "type": toxic.type,
                "stream": toxic.stream,
                "toxicity": toxic.toxicity,
                "attributes": toxic.attributes,
            },
        )

    def remove_toxic(self, proxy: str, toxic_name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic_name}")

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/proxies/{proxy}/toxics") or []

    def reset(self) -> None:
        """Enable every proxy and remove every toxic: the universal heal."""
        self._call("POST", "/reset")
