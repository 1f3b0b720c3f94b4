"""Which histories are judged in one task: the bound measured on 2 cores, smaller
with more cores (splitting the input pays off sooner), and the override; and a
cluster's shuffle partitions, which no one-task analysis runs on."""

from __future__ import annotations

import pytest
from kafka_trial.spark_analysis.spark.sizing import (
    CLUSTER_BYTES_PER_PARTITION,
    ONE_TASK_MAX_BYTES_2_CORES,
    cluster_sql,
    one_task_max_bytes,
)


@pytest.fixture(autouse=True)
def _no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_TRIAL_ONE_TASK_BYTES", raising=False)


def test_two_cores_or_fewer_get_the_measured_bound() -> None:
    assert one_task_max_bytes(1) == one_task_max_bytes(2) == ONE_TASK_MAX_BYTES_2_CORES
    # The 2M-line benchmark history (648 MB) was measured faster in one task.
    assert one_task_max_bytes(2) > 648_000_000


def test_more_cores_shrink_the_bound_down_to_a_floor() -> None:
    assert one_task_max_bytes(4) == ONE_TASK_MAX_BYTES_2_CORES // 2
    assert one_task_max_bytes(8) < one_task_max_bytes(4)
    assert one_task_max_bytes(1024) == 64 << 20


def test_the_environment_overrides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_TRIAL_ONE_TASK_BYTES", "123")
    assert one_task_max_bytes(2) == one_task_max_bytes(64) == 123


def test_a_cluster_gets_two_shuffle_partitions_per_core_or_one_per_64_mb() -> None:
    # A small history on a small cluster: few partitions, since each costs a remote
    # task in every stage.
    assert cluster_sql(100, 1) == {"spark.sql.shuffle.partitions": "2"}
    assert cluster_sql(100, 16) == {"spark.sql.shuffle.partitions": "32"}
    # A big history: one partition per 64 MB, rounded up.
    assert cluster_sql(10 * CLUSTER_BYTES_PER_PARTITION + 1, 2) == {
        "spark.sql.shuffle.partitions": "11"
    }
