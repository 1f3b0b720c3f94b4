"""A librdkafka producer in a process of its own, driven from the worker's thread.

`client-pause` freezes a client as a GC pause would: every thread of the application,
librdkafka's included, stops at once, and timers run on when it wakes. A producer in
the harness's own process cannot be frozen alone, so a worker with
`producer.own_process` drives one here instead. The worker keeps its thread, its ops
and the run's history writer; it calls this object as it would call a Producer, and
each call is carried out by the child and answered with the delivery reports that
came meanwhile. The child records nothing, so a frozen or killed child cannot lose or
tear a history line: the op it was in stays open in the parent, and completes when the
child answers (or `info` when it is gone).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import signal
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from kafka_trial.contracts.client_processes import CLIENTS

# What crosses the pipe: plain values only (a librdkafka logger or callback does not).
_PLAIN = (str, int, float, bool)
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class _Delivered:
    """What a delivery callback reads of a message."""

    _offset: int | None

    def offset(self) -> int | None:
        return self._offset


def _error(e: KafkaError) -> tuple[Any, ...]:
    return (e.code(), e.str(), e.fatal(), e.retriable(), e.txn_requires_abort())


def _kafka_error(e: tuple[Any, ...]) -> KafkaError:
    code, reason, fatal, retriable, txn_requires_abort = e
    return KafkaError(
        code, reason, fatal=fatal, retriable=retriable, txn_requires_abort=txn_requires_abort
    )


def _serve(conn: Connection, conf: dict[str, Any], log_path: str | None) -> None:
    """The child: one Producer, one call at a time from the pipe."""
    # Die with the parent, even while stopped: SIGKILL reaches a stopped process.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    if log_path is not None:
        lg = logging.getLogger("kafka-trial.client-process")
        lg.setLevel(logging.DEBUG)
        h = logging.FileHandler(log_path)
        h.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        lg.addHandler(h)
        conf = {**conf, "logger": lg}
    producer = Producer(conf)
    reports: list[tuple[int, int | None, tuple[Any, ...] | None]] = []

    def report(i: int) -> Callable[[KafkaError | None, Any], None]:
        def cb(err: KafkaError | None, msg: Any) -> None:
            off = msg.offset() if err is None else None
            reports.append((i, off if off is not None and off >= 0 else None, err and _error(err)))

        return cb

    while True:
        try:
            method, args = conn.recv()
        except EOFError:
            return
        try:
            if method == "produce":
                i, topic, value, partition, key = args
                producer.produce(
                    topic, value=value, key=key, partition=partition, on_delivery=report(i)
                )
                result: Any = None
            elif method == "close":
                conn.send(("ok", None, reports))
                return
            else:
                result = getattr(producer, method)(*args)
            answer: tuple[Any, ...] = ("ok", result, list(reports))
        except KafkaException as e:
            answer = ("kafka", _error(e.args[0]), list(reports))
        except BufferError as e:
            answer = ("buffer", str(e), list(reports))
        reports.clear()
        conn.send(answer)


class ProcessProducer:
    """The Producer calls a transactional worker makes, carried out in a child process.
    The child is registered in the run's client processes while it lives."""

    def __init__(self, conf: dict[str, Any], name: str) -> None:
        plain = {k: v for k, v in conf.items() if isinstance(v, _PLAIN)}
        logger = conf.get("logger")
        log_path = next(
            (h.baseFilename for h in getattr(logger, "handlers", []) if hasattr(h, "baseFilename")),
            None,
        )
        ctx = multiprocessing.get_context("spawn")
        self._conn, child_end = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve, args=(child_end, plain, log_path), name=name, daemon=True
        )
        self._proc.start()
        child_end.close()
        self.name = name
        self.pid: int = self._proc.pid  # type: ignore[assignment]
        self._doing: str | None = None
        CLIENTS.register(name, self.pid, lambda: self._doing)
        self._callbacks: dict[int, Callable[[KafkaError | None, Any], None]] = {}
        self._next = 0

    def _call(self, method: str, *args: Any) -> Any:
        self._doing = method
        try:
            self._conn.send((method, args))
            # However long the child is frozen, the call waits: the application is the
            # child, and its op stays open in the history until it answers.
            while not self._conn.poll(0.2):
                if not self._proc.is_alive():
                    raise EOFError
            kind, result, reports = self._conn.recv()
        except (EOFError, OSError, BrokenPipeError) as e:
            self._gone()
            raise KafkaException(
                KafkaError(KafkaError._FATAL, f"client process {self.name} is gone", fatal=True)
            ) from e
        finally:
            self._doing = None
        for i, offset, err in reports:
            cb = self._callbacks.pop(i, None)
            if cb is not None:
                cb(_kafka_error(err) if err else None, _Delivered(offset))
        if kind == "kafka":
            raise KafkaException(_kafka_error(result))
        if kind == "buffer":
            raise BufferError(result)
        return result

    def _gone(self) -> None:
        CLIENTS.unregister(self.pid)

    # The Producer calls the workers make.
    def init_transactions(self, timeout: float) -> None:
        self._call("init_transactions", timeout)

    def begin_transaction(self) -> None:
        self._call("begin_transaction")

    def commit_transaction(self, timeout: float) -> None:
        self._call("commit_transaction", timeout)

    def abort_transaction(self, timeout: float) -> None:
        self._call("abort_transaction", timeout)

    def produce(
        self,
        topic: str,
        value: bytes,
        partition: int,
        on_delivery: Callable[[KafkaError | None, Any], None],
        key: bytes | None = None,
    ) -> None:
        i, self._next = self._next, self._next + 1
        self._callbacks[i] = on_delivery
        self._call("produce", i, topic, value, partition, key)

    def flush(self, timeout: float = -1) -> int:
        return int(self._call("flush", timeout))

    def poll(self, timeout: float = 0) -> int:
        return int(self._call("poll", timeout))

    def purge(self, in_queue: bool = True, in_flight: bool = True) -> None:
        self._call("purge", in_queue, in_flight)

    def close(self) -> None:
        """End the child as a crash would, unless it is already gone."""
        with contextlib.suppress(Exception):
            self._proc.kill()
        self._proc.join(5)
        self._conn.close()
        self._gone()
