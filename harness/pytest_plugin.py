"""kafka-trial as a pytest plugin: put your own producers and consumers under real
faults on a real cluster, record what they did, and have the checker judge it.

    def test_my_consumer(kafka_cluster, nemesis, trial_history):
        topic = kafka_cluster.create_topic("orders", partitions=3, rf=3)
        with nemesis.kill_leader(topic, partition=0):
            run_my_service(bootstrap=kafka_cluster.bootstrap, history=trial_history)
        trial_history.drain(kafka_cluster, topic)
        assert trial_history.check(allow=["duplicate"]).valid

Registered through the `pytest11` entry point when kafka-trial is installed. The
cluster is session-scoped and configured by ini options (`kafka_trial_version`,
`kafka_trial_brokers`, `kafka_trial_broker_config`); faults are context managers
that always heal. Imports are lazy: loading the plugin costs nothing until a test
asks for one of its fixtures.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kafka_trial.checkers.results import Results
    from kafka_trial.cluster.facade import Cluster
    from kafka_trial.contracts.history import HistoryWriter


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("kafka_trial_version", "Kafka version of the kafka_cluster fixture", default="4")
    parser.addini("kafka_trial_brokers", "brokers in the kafka_cluster fixture", default="3")
    parser.addini(
        "kafka_trial_broker_config",
        "extra broker settings for kafka_cluster, one key=value per line",
        type="linelist",
        default=[],
    )


class TrialCluster:
    """The session's cluster: `bootstrap`, `create_topic(...)`, and the full
    `kafka_trial.cluster.Cluster` as `.cluster`."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.topics: dict[str, int] = {}  # name -> partitions

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def create_topic(
        self,
        name: str,
        partitions: int = 3,
        rf: int = 3,
        min_isr: int = 2,
        unclean: bool = False,
    ) -> str:
        from kafka_trial.cluster.settings import TopicSpec
        from kafka_trial.contracts.errors import TrialError

        if name not in self.topics:
            spec = TopicSpec(
                name=name,
                partitions=partitions,
                replication_factor=rf,
                min_insync_replicas=min_isr,
                unclean_leader_election=unclean,
            )
            self.cluster.create_topic(spec)
            if not self.cluster.await_in_sync(name, self.cluster.spec.startup_timeout_s):
                raise TrialError(f"topic {name} never became in sync", "read the broker logs")
            self.topics[name] = partitions
        return name


@dataclass
class Verdict:
    """What the checker found. `valid` is True, False or "unknown"; the repr names
    each forbidden anomaly with witnesses, and where the run directory and its
    report are, so a failed `assert verdict.valid` says why."""

    valid: Any
    results: Results
    run_dir: Path

    @property
    def forbidden(self) -> dict[str, int]:
        return self.results.forbidden()

    def __repr__(self) -> str:
        parts = [f"kafka-trial verdict {self.results.word}"]
        for name in self.results.forbidden_seen:
            a = self.results.anomalies[name]
            ex = "; ".join(json.dumps(e, separators=(",", ":")) for e in a.examples[:3])
            parts.append(f"{name} {a.count} (forbidden), e.g. {ex}")
        parts += [f"problem: {p}" for p in self.results.problems]
        parts.append(f"report: {self.run_dir / 'report.html'}")
        return "<" + "; ".join(parts) + ">"


@dataclass
class TrialHistory:
    """A Jepsen history your code writes into: each call is one op, invoked and
    completed. Processes are your own ids (ints or names) for logical clients."""

    run_dir: Path
    writer: HistoryWriter = field(init=False)
    _drains: Iterator[int] = field(default_factory=lambda: itertools.count(1_000_000))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        from kafka_trial.contracts.history import HistoryWriter

        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.writer = HistoryWriter(self.run_dir / "history.jsonl")

    def send(
        self,
        process: int,
        topic: str,
        value: int,
        partition: int | None = None,
        offset: int | None = None,
        outcome: str = "ok",
    ) -> None:
        """A send of one unique integer `value`: `ok` (acknowledged, at partition and
        offset), `fail` (certainly not written) or `info` (unknown)."""
        self.sends(process, topic, [(value, partition, offset)], outcome)

    def sends(
        self,
        process: int,
        topic: str,
        values: Sequence[tuple[int, int | None, int | None]],
        outcome: str = "ok",
    ) -> None:
        """One op of several sends: (value, partition, offset) each, one outcome."""
        from kafka_trial.contracts.ops import Send

        with self._lock:
            self.writer.invoke(
                process, "send", [Send(topic=topic, partition=p, value=v) for v, p, _ in values]
            )
            done = [
                Send(topic=topic, partition=p, value=v, offset=o, outcome=outcome)  # type: ignore[arg-type]
                for v, p, o in values
            ]
            self.writer.complete(outcome, process, "send", done)  # type: ignore[arg-type]

    def poll(self, process: int, records: Iterable[tuple[str, int, int, int | None]]) -> None:
        """A poll that returned (topic, partition, offset, value) records."""
        from kafka_trial.contracts.ops import Poll, Record

        recs = tuple(Record(topic=t, partition=p, offset=o, value=v) for t, p, o, v in records)
        with self._lock:
            self.writer.invoke(process, "poll", [Poll()])
            self.writer.complete("ok", process, "poll", [Poll(records=recs)])

    def processed(self, process: int, records: Iterable[tuple[str, int, int, int | None]]) -> None:
        """Your application finished processing these (topic, partition, offset, value)
        records: what group-missed and group-redelivered judge."""
        from kafka_trial.contracts.ops import Processed, Record

        recs = tuple(Record(topic=t, partition=p, offset=o, value=v) for t, p, o, v in records)
        with self._lock:
            self.writer.invoke(process, "process", [Processed(records=())])
            self.writer.complete("ok", process, "process", [Processed(records=recs)])

    def group_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        """The group's committed offsets at the end, {(topic, partition): offset}."""
        from kafka_trial.contracts.ops import GroupOffsets, TopicOffset

        off = tuple(TopicOffset(topic=t, partition=p, offset=o) for (t, p), o in offsets.items())
        process = next(self._drains)
        micro = GroupOffsets(role="consumer", group=group)
        with self._lock:
            self.writer.invoke(process, "group-offsets", [micro])
            done = GroupOffsets(role="consumer", group=group, offsets=off)
            self.writer.complete("ok", process, "group-offsets", [done])

    def drain(self, cluster: TrialCluster, topic: str, settle_s: float = 3.0) -> bool:
        """The final read: every partition of `topic` from the beginning to its end,
        read_committed, as kafka-trial's own runs end. Without it an unread value is
        `unseen`, never a proven loss. Returns whether every partition was read."""
        from kafka_trial.cluster.settings import TopicSpec
        from kafka_trial.workloads.base import ClientContext
        from kafka_trial.workloads.drain import drain
        from kafka_trial.workloads.processes import ProcessIds
        from kafka_trial.workloads.settings import DrainSpec

        # Drain processes are numbered from the plugin's own range, never yours.
        ctx = ClientContext(
            self.writer, lambda lane: cluster.bootstrap, pids=ProcessIds(self._drains)
        )
        parts = cluster.topics.get(topic, 3)
        spec = TopicSpec(name=topic, partitions=parts)
        return drain(ctx, spec, DrainSpec(settle_s=settle_s)).complete

    def check(self, allow: Sequence[str] = ()) -> Verdict:
        """Judge the history with the Spark checker; anomalies in `allow` do not make
        it invalid. Writes results.json and report.html into the run directory."""
        from kafka_trial.checkers.settings import CheckSpec
        from kafka_trial.harness.spec import RunSpec
        from kafka_trial.report.judge import judge

        self.writer.flush()  # the lines recorded so far, on disk for Spark
        # Only the check section: the rest of this run's settings are the test's own,
        # and the report shows them as unknown rather than as a run's defaults.
        RunSpec(check=CheckSpec(allowed=tuple(allow))).write(self.run_dir, only_set=True)
        results = judge(self.run_dir, say=None).results
        assert results is not None
        return Verdict(results.valid, results, self.run_dir)


class TrialNemesis:
    """Faults as context managers that always heal, recorded in the test's history."""

    def __init__(self, cluster: TrialCluster, history: TrialHistory) -> None:
        self._cluster = cluster
        self._history = history

    @contextlib.contextmanager
    def fault(self, package: str, topic: str = "trial", partition: int = 0) -> Iterator[Any]:
        """Any nemesis package (`kafka-trial run --help` lists them) for the block."""
        from kafka_trial.nemesis import Nemesis
        from kafka_trial.nemesis.settings import NemesisSpec

        nem = Nemesis(
            self._cluster.cluster,
            self._history.writer,
            NemesisSpec(faults=(package,), target_partition=partition),
            topic,
        )
        with nem.during(package) as applied:
            yield applied

    def kill_leader(self, topic: str, partition: int = 0) -> contextlib.AbstractContextManager[Any]:
        return self.fault("kill-leader", topic, partition)

    def isolate_broker(self, topic: str = "trial") -> contextlib.AbstractContextManager[Any]:
        return self.fault("isolate-broker", topic)

    def pause(self, topic: str, partition: int = 0) -> contextlib.AbstractContextManager[Any]:
        return self.fault("pause", topic, partition)

    def heal_all(self) -> None:
        self._cluster.cluster.heal_all()


@pytest.fixture(scope="session")
def kafka_cluster(pytestconfig: pytest.Config) -> Iterator[TrialCluster]:
    """A real KRaft cluster behind Toxiproxy for the whole session, removed after."""
    from kafka_trial.cluster.facade import Cluster
    from kafka_trial.cluster.settings import ClusterSpec

    config = dict(ClusterSpec().broker_config)
    for line in pytestconfig.getini("kafka_trial_broker_config"):
        key, _, value = line.partition("=")
        config[key.strip()] = value.strip()
    spec = ClusterSpec(
        kafka_version=str(pytestconfig.getini("kafka_trial_version")),
        brokers=int(pytestconfig.getini("kafka_trial_brokers")),
        broker_config=config,
    )
    with Cluster.running(spec) as cluster:
        yield TrialCluster(cluster)


@pytest.fixture
def trial_history(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TrialHistory]:
    """This test's history, in tmp_path/kafka-trial (kept, with its report)."""
    h = TrialHistory(tmp_path / "kafka-trial")
    yield h
    h.writer.close()
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        request.node.add_report_section(
            "call", "kafka-trial", f"run directory with history and report: {h.run_dir}"
        )


@pytest.fixture
def nemesis(kafka_cluster: TrialCluster, trial_history: TrialHistory) -> Iterator[TrialNemesis]:
    n = TrialNemesis(kafka_cluster, trial_history)
    yield n
    n.heal_all()  # whatever a test left, the next one starts whole


@pytest.fixture
def trial_app(tmp_path: Path) -> Callable[..., Any]:
    """Puts an application on trial: `trial_app(command="python -m svc",
    guarantee="at-least-once", faults=["kill-leader", "app-kill"])` runs it against its
    own cluster and returns the `Results` (kafka_trial.harness.trial.put_on_trial, with
    the run directory under tmp_path)."""
    from kafka_trial.harness import trial as trials

    def trial(**kw: Any) -> Any:
        kw.setdefault("runs_dir", tmp_path / "kafka-trial")
        return trials.put_on_trial(**kw)

    return trial


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    rep = yield
    if rep.when == "call":
        item.rep_call = rep  # type: ignore[attr-defined]
    return rep
