from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest

CLUSTER_TESTS = "tests/integration/"
ROOT = Path(__file__).resolve().parents[1]


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """One xdist worker runs every cluster test, one after another: two clusters at
    once on two cores would turn fault timings into noise. The other worker judges
    the unit tests' planted histories meanwhile, CPU work that fits in the cluster
    tests' waits. (xdist's own `loadgroup` cannot do this under pytest 9, which no
    longer reads the node id that xdist rewrites.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ClusterTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(CLUSTER_TESTS):
                return CLUSTER_TESTS
            module = nodeid.split("::")[0]
            return module if _module_fixture(module) else nodeid

    return ClusterTestsTogether(config, log)


@functools.cache
def _module_fixture(module: str) -> bool:
    """Whether a test module builds a module-scoped fixture (a batch of planted
    histories judged in one analysis, say): its tests stay on one worker, or each
    worker that runs one of them builds the fixture again."""
    path = ROOT / module
    return path.is_file() and 'scope="module"' in path.read_text()


_yielding = False


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A worker that judges planted histories runs at a lower CPU priority, and so
    does its Spark JVM (started later, as its child): it gets what the cluster tests
    leave idle, and the cluster tests' timings stay what they are when run alone."""
    global _yielding
    if _yielding or not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if not item.nodeid.startswith(CLUSTER_TESTS):
        os.nice(5)
        _yielding = True


@pytest.fixture(scope="session")
def spark():
    from kafka_trial.spark_analysis.spark.session import spark_session

    # One session judges every planted history a worker runs, a few hundred analyses:
    # at the default 2g its heap filled (a suite run of 2026-11-25 died of
    # OutOfMemoryError in its ~270th test, each GC slower than the last before it).
    os.environ.setdefault("KAFKA_TRIAL_SPARK_DRIVER_MEMORY", "4g")
    s = spark_session("local[2]")
    yield s
    s.stop()
