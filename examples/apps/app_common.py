"""What the three Python example apps share: their settings from the environment,
logging to stderr, SIGTERM, the input consumer and its batches. Each app's own file
holds only what makes its guarantee: the order of commit and produce."""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

log = logging.getLogger("app")
_stop = False


def stopping() -> bool:
    return _stop


def _on_sigterm(signum: int, frame: object) -> None:
    global _stop
    _stop = True  # the app finishes the batch in hand, then leaves its group


@dataclass(frozen=True)
class Settings:
    bootstrap: str
    input_topic: str
    output_topic: str
    group: str
    instance: str


def start() -> Settings | None:
    """Logging and SIGTERM set up, and the settings, or None (logged) when one is missing."""
    env = os.environ
    instance = env.get("INSTANCE_ID", "0")
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format=f"%(asctime)s %(levelname)s app-{instance} %(message)s",
    )
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return Settings(
            env["KAFKA_BOOTSTRAP_SERVERS"],
            env["INPUT_TOPIC"],
            env["OUTPUT_TOPIC"],
            env["GROUP_ID"],
            instance,
        )
    except KeyError as e:
        log.error("%s is not set", e.args[0])
        return None


def consumer(s: Settings, **overrides: object) -> Consumer:
    """The input's consumer in group GROUP_ID; offsets are committed by the app only,
    unless `overrides` say otherwise (librdkafka's names with `_` for `.`)."""
    c = Consumer(
        {
            "bootstrap.servers": s.bootstrap,
            "group.id": s.group,
            "client.id": f"{s.group}-{s.instance}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",  # never copy an aborted input
            # A crashed instance's partitions move after 10 s, not the default 45 s.
            "session.timeout.ms": 10000,
            **{k.replace("_", "."): v for k, v in overrides.items()},
        }
    )
    c.subscribe(
        [s.input_topic],
        on_assign=lambda _c, ps: log.info("assigned %s", [p.partition for p in ps]),
        on_revoke=lambda _c, ps: log.info("revoked %s", [p.partition for p in ps]),
    )
    log.info("copying %s -> %s as group %s", s.input_topic, s.output_topic, s.group)
    return c


def batches(c: Consumer) -> Iterator[list[Message]]:
    """Batches of input records until SIGTERM; a fatal consumer error raises."""
    while not stopping():
        msgs = c.consume(num_messages=500, timeout=1.0)
        for m in msgs:
            if m.error() is not None:
                log.warning("consumer error: %s", m.error())
                if m.error().fatal():
                    raise KafkaException(m.error())
        batch = [m for m in msgs if m.error() is None]
        if batch:
            yield batch


def offsets_after(batch: list[Message]) -> list[TopicPartition]:
    """The offsets to commit once the batch is done: each partition's last + 1."""
    last = {(m.topic(), m.partition()): m.offset() for m in batch}
    return [TopicPartition(t, p, o + 1) for (t, p), o in last.items()]


def rewind(c: Consumer, batch: list[Message]) -> None:
    """Seek back to the batch's first offsets, so that it is read again."""
    first: dict[tuple[str, int], int] = {}
    for m in batch:
        first.setdefault((m.topic(), m.partition()), m.offset())
    for (topic, partition), offset in first.items():
        try:
            c.seek(TopicPartition(topic, partition, offset))
        except KafkaException as e:  # no longer ours: its new owner reads it again
            log.warning("could not rewind %s[%d]: %s", topic, partition, e)
