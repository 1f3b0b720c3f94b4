"""The transactional.ids a run's clients hold, and how each client reaches the cluster.

Transactional workers (a transactional producer, an exactly-once copier) register
their id while they run; the nemesis's `hijack-txn` fault picks one here and takes
it over from a client of its own, as a second instance of the application would.
The workers' ids are made from the run's id, which the nemesis is never told, and
only a worker that runs can be fenced: a registry of the live ones is both. One
registry per Python process, like `client_processes.CLIENTS`: a campaign's runs come
one after another, and a worker unregisters its id as it ends.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TransactionalClient:
    transactional_id: str
    workload: str  # "producer" or "copier": whose id it is
    # The client's librdkafka settings for reaching the cluster (its lane's bootstrap,
    # the run's security settings): a hijacker connects as the client does.
    connect: dict[str, Any] = field(default_factory=dict)


class TransactionalIds:
    def __init__(self) -> None:
        self._live: dict[str, TransactionalClient] = {}
        self._lock = threading.Lock()

    def register(self, transactional_id: str, workload: str, connect: dict[str, Any]) -> None:
        with self._lock:
            self._live[transactional_id] = TransactionalClient(
                transactional_id, workload, dict(connect)
            )

    def unregister(self, transactional_id: str) -> None:
        with self._lock:
            self._live.pop(transactional_id, None)

    def live(self) -> list[TransactionalClient]:
        """In the ids' order: the same pick takes the same id in a replayed run."""
        with self._lock:
            return sorted(self._live.values(), key=lambda c: c.transactional_id)


TXN_IDS = TransactionalIds()
