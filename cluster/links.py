"""A directed link between two namespaces, as one Toxiproxy proxy."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_trial.cluster.control import BOTH_STREAMS, CutMode, LinkKind, Stream
from kafka_trial.cluster.naming import CUT_TOXICS, proxy_name
from kafka_trial.cluster.toxiproxy import Toxic, ToxiproxyClient


@dataclass(frozen=True)
class Link:
    """Connections that `src` opens to `dst` (src=None for host clients)."""

    src: int | None
    dst: int
    kind: LinkKind
    toxi: ToxiproxyClient
    lane: int = 0  # which client lane, for client links

    @property
    def proxy(self) -> str:
        return proxy_name(self.dst, self.kind, self.lane)

    def cut(self, mode: CutMode = "drop", streams: tuple[Stream, ...] = BOTH_STREAMS) -> None:
        """Cut this link. `streams` narrows a drop to one direction of its connections:
        upstream is what src sends, downstream what dst answers."""
        if mode == "reject":
            # Disabling closes live connections and refuses new ones (both directions).
            self.toxi.set_enabled(self.proxy, False)
            return
        # timeout=0 holds data forever without closing: a silent black hole.
        existing = {t["name"] for t in self.toxi.toxics(self.proxy)}
        for name, stream in zip(CUT_TOXICS, BOTH_STREAMS, strict=True):
            if stream in streams and name not in existing:
                self.toxi.add_toxic(
                    self.proxy,
                    Toxic(name, "timeout", stream, {"timeout": 0}),  # type: ignore[arg-type]
                )

    def heal(self) -> None:
        """Every toxic off this link, and the link enabled."""
        for t in self.toxi.toxics(self.proxy):
            self.toxi.remove_toxic(self.proxy, t["name"])
        self.toxi.set_enabled(self.proxy, True)

    def uncut(self) -> None:
        """Undo `cut` only: toxics other faults put on this link stay."""
        for t in self.toxi.toxics(self.proxy):
            if t["name"] in CUT_TOXICS:
                self.toxi.remove_toxic(self.proxy, t["name"])
        self.toxi.set_enabled(self.proxy, True)

    def add_toxic(self, toxic: Toxic) -> None:
        self.toxi.add_toxic(self.proxy, toxic)
