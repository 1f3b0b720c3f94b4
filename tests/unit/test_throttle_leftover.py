"""The throttle a killed run left: `heal_leftovers` deletes it through the Admin API
and reads it back gone, as a reassign's own heal does. A broker describes its configs
from its metadata image, which takes a deletion a moment after the controller: a
fresh-clone CI read broker 3's rates back just after `heal_leftovers` deleted them."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType
from kafka_trial.cluster import throttle

RATE = {n: "131072" for n in throttle.RATES}


def _done(value: object) -> Future:
    f: Future = Future()
    f.set_result(value)
    return f


class LaggingAdmin:
    """A cluster whose broker 3 still describes its rates for `stale` reads after their
    deletion (`stale=None`: for ever)."""

    def __init__(self, stale: int | None) -> None:
        self.configs: dict[tuple[ResourceType, str], dict[str, str]] = {
            (ResourceType.BROKER, "1"): dict(RATE),
            (ResourceType.BROKER, "3"): dict(RATE),
            (ResourceType.TOPIC, "trial"): {n: "0:1" for n in throttle.REPLICAS},
        }
        self.stale = stale
        self.deleted_at_3 = False

    def list_topics(self, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(topics={"trial": None, "other": None}, brokers={1: 0, 2: 0, 3: 0})

    def describe_configs(self, resources: list[ConfigResource], request_timeout: float) -> dict:
        (res,) = resources
        key = (res.restype, res.name)
        seen = dict(self.configs.get(key, {}))
        lagging = self.stale is None or self.stale > 0
        if key == (ResourceType.BROKER, "3") and self.deleted_at_3 and lagging:
            seen = dict(RATE)
            if self.stale is not None:
                self.stale -= 1
        source = (
            ConfigSource.DYNAMIC_TOPIC_CONFIG
            if res.restype == ResourceType.TOPIC
            else ConfigSource.DYNAMIC_BROKER_CONFIG
        )
        entries = {n: SimpleNamespace(value=v, source=source) for n, v in seen.items()}
        return {res: _done(entries)}

    def incremental_alter_configs(
        self, resources: list[ConfigResource], request_timeout: float
    ) -> dict:
        (res,) = resources
        key = (res.restype, res.name)
        for entry in res.incremental_configs:
            self.configs.get(key, {}).pop(entry.name, None)
        if key == (ResourceType.BROKER, "3"):
            self.deleted_at_3 = True
        return {res: _done(None)}


def test_a_deleted_throttle_that_reads_back_late_is_read_again_until_gone(monkeypatch) -> None:
    monkeypatch.setattr(throttle, "GONE_S", 3.0)
    admin = LaggingAdmin(stale=2)
    cleared = throttle.clear_leftover(admin, timeout_s=5)  # type: ignore[arg-type]
    assert cleared == ["topic trial", "broker 1", "broker 3"]
    assert admin.stale == 0  # read again until it was gone, not taken at its first word
    assert all(not c for c in admin.configs.values())


def test_a_deleted_throttle_still_set_after_the_wait_is_an_error(monkeypatch) -> None:
    monkeypatch.setattr(throttle, "GONE_S", 0.3)
    admin = LaggingAdmin(stale=None)
    with pytest.raises(RuntimeError, match=r"still set .* broker 3$"):
        throttle.clear_leftover(admin, timeout_s=5)  # type: ignore[arg-type]


def test_a_cluster_with_no_throttle_is_left_alone() -> None:
    admin = LaggingAdmin(stale=None)
    admin.configs = {}
    assert throttle.clear_leftover(admin, timeout_s=5) == []  # type: ignore[arg-type]
    assert not admin.deleted_at_3
