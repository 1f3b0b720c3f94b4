"""`hijack-txn` (also offered as `fence-txn-id`, the name the fault was first asked
for; both record the op `hijack-txn`): a second producer takes over a live client's
transactional.id, as Redpanda's `hijack_tx_ids` fault does. Its init_transactions
makes the coordinator bump the id's epoch and abort whatever the live producer had
open; from then on that producer is fenced, and exactly-once holds only if nothing it
does after commits.

The completion records what the coordinator verifiably granted: the id, how long
init_transactions took, and the producer id and epoch librdkafka was given; and the
session it fenced (`client`), for the `fenced-write` check. An id
that could not be taken over (none running, init_transactions refused or not
returned in time) completes `info` with the reason. Nothing to heal: the hijacker is
closed within the op, and the fenced client starts a new producer of its own."""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException, Producer
from kafka_trial.cluster.control import ClusterControl
from kafka_trial.contracts.transactional_ids import TXN_IDS, TransactionalClient
from kafka_trial.nemesis.catalog import TXN_FENCE_OP
from kafka_trial.nemesis.steps import Done, Step
from kafka_trial.nemesis.targets import NoTarget

# librdkafka's eos debug line for the producer id and epoch InitProducerId returned.
_ACQUIRED = re.compile(r"Acquired PID\{Id:(-?\d+),Epoch:(-?\d+)\}")
# How long closing the hijacker may take: it holds no transaction and nothing queued,
# so a close that outlasts this is left to a daemon thread rather than stall the
# nemesis (a timed-out init may still be retrying inside it).
CLOSE_S = 10.0


class NotHijacked(RuntimeError):
    """init_transactions did not return: whether the epoch moved is not known."""


class _Lines(logging.Handler):
    """Keeps the hijacker's own librdkafka log, to read the epoch it was given."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _close(producer: Any) -> bool:
    """Close the hijacker within CLOSE_S; whether it closed."""
    closed = threading.Event()

    def close() -> None:
        try:
            producer.close()
        except (KafkaException, RuntimeError):
            pass
        finally:
            closed.set()

    threading.Thread(target=close, name="close hijacker", daemon=True).start()
    return closed.wait(CLOSE_S)


def hijack(target: TransactionalClient, init_s: float) -> dict[str, Any]:
    """Take `target`'s transactional.id over: what the coordinator granted, or
    NotHijacked."""
    tid = target.transactional_id
    lines = _Lines()
    logger = logging.Logger(f"hijack {tid}")  # not in logging's registry: one per op
    logger.addHandler(lines)
    conf = {
        **{k: v for k, v in target.connect.items() if k not in ("logger", "log_level")},
        "transactional.id": tid,
        "client.id": f"kt-hijack-{tid}",
        "debug": "eos",
        "log_level": 7,
        "logger": logger,
    }
    producer = Producer(conf)
    t0 = time.monotonic()
    try:
        producer.init_transactions(init_s)
    except KafkaException as e:
        # Dropped, not closed: close() would try to abort through the same coordinator
        # that did not answer, and warn that the init is still in progress.
        producer.purge()
        err = e.args[0]
        raise NotHijacked(
            f"init_transactions for {tid} failed after {time.monotonic() - t0:.1f} s "
            f"(limit {init_s:.0f} s): {err.name()}: {err.str()}"
        ) from None
    took = time.monotonic() - t0
    producer.poll(0)  # delivers the log lines init_transactions queued
    closed = _close(producer)
    result: dict[str, Any] = {
        "transactional_id": tid,
        "workload": target.workload,
        "init_returned": True,
        "init_s": round(took, 3),
        "closed": closed,
    }
    if target.client is not None:
        # The session that held the id when it was picked: its init_transactions had
        # returned before this one began, so this epoch is newer and it is fenced.
        result["client"] = target.client
    got = [m for line in lines.lines if (m := _ACQUIRED.search(line))]
    if got:
        result |= {"producer_id": int(got[-1][1]), "epoch": int(got[-1][2])}
    return result


@dataclass(frozen=True)
class HijackTxn:
    """The pick's choice among the transactional.ids running now (the transactional
    producers' `kt-{run}-{i}`, the copiers' `kt-{run}-copier-{i}`), taken over. `name`
    is the package's (`hijack-txn` or `fence-txn-id`); the op is `hijack-txn` under
    either, so a history's readers need to know one f."""

    init_s: float = 30.0
    name: str = "hijack-txn"

    def fault(self, ctl: ClusterControl, pick: int) -> Iterator[Step]:
        def act() -> Done:
            live = TXN_IDS.live()
            if not live:
                raise NoTarget(
                    "no transactional producer or copier is running: no transactional.id "
                    "to take over"
                )
            return Done(hijack(random.Random(pick).choice(live), self.init_s))

        yield Step(TXN_FENCE_OP, {"target": "transactional-id"}, act)
