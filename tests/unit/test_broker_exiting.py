"""A broker whose JVM began to exit while its container still runs is told from its
log: the shutdown hook's thread, with the fatal error that came first as the why.
The lines are a fresh-clone CI's (2026-11-30, a corrupted KRaft response)."""

from __future__ import annotations

from typing import Any

from kafka_trial.cluster.brokers import Broker, _epoch

RUN1 = "2026-11-30T12:40:00.000000000Z"
RUN2 = "2026-11-30T12:58:00.000000000Z"
STEADY = (
    "2026-11-30T12:52:05.532078299Z 2026-11-30T12:52:05.530 [quorum-controller-1-event-handler]"
    " INFO org.apache.kafka.controller.ProducerIdControlManager - Replaying ProducerIdsRecord"
)
FATAL = (
    "2026-11-30T12:52:11.569001628Z 2026-11-30T12:52:11.568 [kafka-1-raft-outbound-request-thread]"
    " ERROR org.apache.kafka.raft.KafkaNetworkChannel$SendThread - [kafka-1-raft-outbound-"
    "request-thread]: Stopped due to fatal error with exit code 1"
)
HOOK = (
    "2026-11-30T12:52:11.576054759Z 2026-11-30T12:52:11.575 [kafka-shutdown-hook] INFO"
    " kafka.server.BrokerServer - [BrokerServer id=1] Transition from STARTED to SHUTTING_DOWN"
)
BETWEEN = (
    "2026-11-30T12:52:11.571057133Z 2026-11-30T12:52:11.571 [ReplicaFetcherThread-0-3] INFO"
    " org.apache.kafka.clients.NetworkClient - Client requested connection close from node 3"
)
AFTER = (
    "2026-11-30T12:52:13.560649327Z 2026-11-30T12:52:13.560 [kafka-1-raft-io-thread] INFO"
    " org.apache.kafka.raft.KafkaRaftClient - [RaftManager id=1] Transitioning to Prospective"
)


class _Container:
    """What `exiting` reads of a container: its state and its timestamped log."""

    name = "kafka-1"

    def __init__(self) -> None:
        self.state: dict[str, Any] = {"Running": True, "Paused": False, "StartedAt": RUN1}
        self.lines: list[str] = []
        self.asked: list[float | None] = []

    @property
    def attrs(self) -> dict[str, Any]:
        return {"State": self.state}

    def reload(self) -> None:
        pass

    def logs(self, stdout: bool, stderr: bool, timestamps: bool, since: float = 0.0) -> bytes:
        assert stdout and stderr and timestamps
        self.asked.append(since)
        # The engine's `since` keeps the lines stamped at it or after.
        kept = [ln for ln in self.lines if _epoch(ln.split(" ", 1)[0]) >= since]
        return "".join(ln + "\n" for ln in kept).encode()


def _broker(c: _Container) -> Broker:
    return Broker(1, c, None, None, (9092,))  # type: ignore[arg-type]


def test_the_hook_after_a_fatal_error_is_exiting_since_the_hook_for_the_error() -> None:
    c = _Container()
    b = _broker(c)
    c.lines = [STEADY]
    assert b.exiting() is None
    c.lines += [FATAL, BETWEEN]
    assert b.exiting() is None  # the error alone: its thread ended, the JVM not yet
    c.lines += [HOOK, AFTER]
    found = b.exiting()
    assert found is not None
    assert found.since == _epoch("2026-11-30T12:52:11.576054759Z")
    assert "Stopped due to fatal error with exit code 1" in found.why
    # Each look read only what came after the last: the fatal line was kept across.
    assert c.asked == [_epoch(RUN1), _epoch(STEADY[:30]), _epoch(BETWEEN[:30])]
    assert b.exiting() == found and len(c.asked) == 3  # found once, kept for this run


def test_a_hook_alone_is_its_own_why() -> None:
    c = _Container()
    c.lines = [STEADY, HOOK]
    found = _broker(c).exiting()
    assert found is not None and "[kafka-shutdown-hook]" in found.why


def test_a_new_run_of_the_container_is_read_afresh() -> None:
    c = _Container()
    b = _broker(c)
    c.lines = [STEADY, FATAL]
    assert b.exiting() is None
    c.lines += [HOOK]
    assert b.exiting() is not None
    c.state["StartedAt"] = RUN2
    # The new run has logged nothing yet, then a hook alone: neither the old run's
    # lines nor its fatal error count (a CI killed a sound new run once for them).
    assert b.exiting() is None
    assert b.exiting() is None
    assert c.asked[-2:] == [_epoch(RUN2), _epoch(RUN2)]
    hook2 = "2026-11-30T12:58:30.000000000Z 2026-11-30T12:58:30.000" + HOOK.split(".575", 1)[1]
    c.lines += [hook2]
    found = b.exiting()
    assert found is not None and found.since == _epoch(hook2[:30])
    assert "[kafka-shutdown-hook]" in found.why, found


def test_a_stopped_or_paused_container_is_not_exiting() -> None:
    c = _Container()
    c.lines = [FATAL, HOOK]
    c.state["Running"] = False
    assert _broker(c).exiting() is None
    c.state.update(Running=True, Paused=True)
    assert _broker(c).exiting() is None
    assert c.asked == []  # nothing read


def test_engine_times_keep_their_fraction() -> None:
    assert _epoch("2026-11-30T12:52:11.500000000Z") - _epoch("2026-11-30T12:52:11Z") == 0.5
    assert _epoch("") == 0.0
