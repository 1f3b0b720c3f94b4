"""The cluster layer: the Docker engine, images, containers, Toxiproxy links,
observation of Kafka, and leftovers. The only code that touches Docker or Toxiproxy.

Public: `Cluster` (see docs/api.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_trial.cluster.facade import Cluster

__all__ = ["Cluster"]


_PUBLIC = {"Cluster": "kafka_trial.cluster.facade"}


def __getattr__(name: str) -> Any:
    # Lazy, so that importing the settings does not import Docker or the Kafka client.
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(name)
