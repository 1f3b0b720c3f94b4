"""A reassignment's replication throttle, made with the Admin API's configs the way
`kafka-reassign-partitions.sh --throttle` makes it: a rate on each broker the move
involves, and the topic's lists of the replicas the rate applies to."""

from __future__ import annotations

import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
# Each request's own timeout too: the shared admin client's default is its 5 s socket
# timeout, which one stall of a loaded 2-core machine outlasts (a fresh-clone CI saw a
# throttle refused so, "Failed while waiting for broker", while the cluster was sound).
TIMEOUT_S = 30
# How long a deleted throttle may still read back: a broker describes its own configs
# from its metadata image, which takes the deletion a moment after the controller
# commits it (fresh-clone CIs read broker 3's rates back just after deleting them, once
# in a reassign's heal and once in `heal_leftovers`).
GONE_S = 10.0


def _alter(admin: AdminClient, resources: list[ConfigResource]) -> None:
    # librdkafka sends a broker's configs to that broker, and takes at most one broker
    # resource per request: one request per resource.
    for res in resources:
        for fut in admin.incremental_alter_configs([res], request_timeout=TIMEOUT_S).values():
            fut.result(TIMEOUT_S)


def _entries(names: tuple[str, ...], values: tuple[str, ...] | None) -> list[ConfigEntry]:
    op = AlterConfigOpType.SET if values is not None else AlterConfigOpType.DELETE
    return [
        ConfigEntry(n, values[i] if values is not None else None, incremental_operation=op)
        for i, n in enumerate(names)
    ]


def set_throttle(
    admin: AdminClient, topic: str, rate: int, brokers: list[int], leader: str, follower: str
) -> None:
    """Brokers first, as the tool does: the replica lists name what the rates limit."""
    rates = (str(rate), str(rate))
    _alter(
        admin,
        [
            ConfigResource(ResourceType.BROKER, str(b), incremental_configs=_entries(RATES, rates))
            for b in brokers
        ]
        + [
            ConfigResource(
                ResourceType.TOPIC,
                topic,
                incremental_configs=_entries(REPLICAS, (leader, follower)),
            )
        ],
    )


def clear_throttle(admin: AdminClient, topic: str, brokers: list[int]) -> None:
    """Every one of the configs deleted; deleting one that is not set is no error."""
    _alter(
        admin,
        [ConfigResource(ResourceType.TOPIC, topic, incremental_configs=_entries(REPLICAS, None))]
        + [
            ConfigResource(ResourceType.BROKER, str(b), incremental_configs=_entries(RATES, None))
            for b in brokers
        ],
    )


def _described(admin: AdminClient, res: ConfigResource, names: tuple[str, ...]) -> dict[str, str]:
    """The named configs set on the resource itself (not a default, not a static file)."""
    ((_, fut),) = admin.describe_configs([res], request_timeout=TIMEOUT_S).items()
    return {
        n: str(e.value)
        for n, e in fut.result(TIMEOUT_S).items()
        if n in names and _source(e) in OWN and e.value not in (None, "")
    }


# Where a config set by the Admin API shows: per broker, or on the topic.
OWN = (ConfigSource.DYNAMIC_BROKER_CONFIG.value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value)


def _source(e: ConfigEntry) -> int:
    # The client hands the source over as the enum or as its number, by version.
    return int(getattr(e.source, "value", e.source))


def throttle_configs(admin: AdminClient, topic: str, brokers: list[int]) -> dict[str, dict]:
    """What the cluster says is set: `brokers` (id -> name -> value) and `topic`."""
    per_broker = {
        str(b): got
        for b in brokers
        if (got := _described(admin, ConfigResource(ResourceType.BROKER, str(b)), RATES))
    }
    on_topic = _described(admin, ConfigResource(ResourceType.TOPIC, topic), REPLICAS)
    return ({"brokers": per_broker} if per_broker else {}) | (
        {"topic": on_topic} if on_topic else {}
    )


def clear_leftover(admin: AdminClient, timeout_s: float) -> list[str]:
    """Every throttle config set anywhere in the cluster deleted and read back gone,
    for a run killed before its heal: what had one ("topic t", "broker 2"). Raises if
    the cluster does not answer within `timeout_s` (a broker just started needs a
    while), or if a deleted config still reads back `GONE_S` after its deletion."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            md = admin.list_topics(timeout=min(10.0, max(1.0, deadline - time.monotonic())))
            break
        except KafkaException:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1)
    found = [
        (f"topic {t}", ConfigResource(ResourceType.TOPIC, t), REPLICAS) for t in sorted(md.topics)
    ] + [
        (f"broker {b}", ConfigResource(ResourceType.BROKER, str(b)), RATES)
        for b in sorted(md.brokers)
    ]
    cleared = [(what, res, names) for what, res, names in found if _described(admin, res, names)]
    for _, res, names in cleared:
        _alter(
            admin,
            [ConfigResource(res.restype, res.name, incremental_configs=_entries(names, None))],
        )
    left = _read_back(admin, cleared)
    if left:
        raise RuntimeError(f"deleted, yet still set {GONE_S:.0f} s on: {', '.join(left)}")
    return [what for what, _, _ in cleared]


def _read_back(
    admin: AdminClient, deleted: list[tuple[str, ConfigResource, tuple[str, ...]]]
) -> list[str]:
    """Which of the deleted configs still read back once `GONE_S` has passed."""
    deadline = time.monotonic() + GONE_S
    while True:
        left = [
            what
            for what, res, names in deleted
            if _described(admin, ConfigResource(res.restype, res.name), names)
        ]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.5)
