"""The transactional.ids a run's clients hold, and how each client reaches the cluster.

Transactional workers (a transactional producer, an exactly-once copier) register
their id while they run; the nemesis's `hijack-txn` fault picks one here and takes
it over from a client of its own, as a second instance of the application would.
The workers' ids are made from the run's id, which the nemesis is never told, and
only a worker that runs can be fenced: a registry of the live ones is both. One
registry per Python process, like `client_processes.CLIENTS`: a campaign's runs come
one after another, and a worker unregisters its id as it ends.

Each entry also names the producer session that holds the id now (`client`, the
`client` its send micro-ops carry), set only once that session's init_transactions
has returned: a hijacker that reads it and then takes the id over bumps the epoch
after that session's, so the session it names is certainly the one fenced (the
`fenced-write` check rests on it).
"""

from __future__ import annotations

import dataclasses
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
    # The producer session holding the id, once its init_transactions returned (None
    # before the first one did).
    client: int | None = None


class TransactionalIds:
    def __init__(self) -> None:
        self._live: dict[str, TransactionalClient] = {}
        self._lock = threading.Lock()

    def register(
        self,
        transactional_id: str,
        workload: str,
        connect: dict[str, Any],
        client: int | None = None,
    ) -> None:
        with self._lock:
            self._live[transactional_id] = TransactionalClient(
                transactional_id, workload, dict(connect), client
            )

    def session(self, transactional_id: str, client: int) -> None:
        """The id's holder now: a producer session whose init_transactions returned.
        An id no longer registered (its worker ended) stays unregistered."""
        with self._lock:
            held = self._live.get(transactional_id)
            if held is not None:
                self._live[transactional_id] = dataclasses.replace(held, client=client)

    def unregister(self, transactional_id: str) -> None:
        with self._lock:
            self._live.pop(transactional_id, None)

    def live(self) -> list[TransactionalClient]:
        """In the ids' order: the same pick takes the same id in a replayed run."""
        with self._lock:
            return sorted(self._live.values(), key=lambda c: c.transactional_id)


TXN_IDS = TransactionalIds()
