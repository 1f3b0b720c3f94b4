"""hijack-txn (and its other name, fence-txn-id) on the in-memory cluster: which
transactional.id it takes, what its completion records (the session it fenced among
it), that it never ends a silent ok, that a run without a transactional client is
refused, and that a fenced worker goes on under its id as a new session.

The hijacker's producer is librdkafka's, against its in-process mock cluster where a
test needs init_transactions to return: client plumbing only, no Kafka claim (the
mock grants ids but fences nobody). That a hijack fences a live producer on real
brokers is tests/integration/test_faults.py's."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.contracts.transactional_ids import TXN_IDS
from kafka_trial.harness.spec import build_spec
from kafka_trial.nemesis import Nemesis
from kafka_trial.nemesis.effects import effect
from kafka_trial.nemesis.hijack import HijackTxn
from kafka_trial.nemesis.packages import build_package
from kafka_trial.nemesis.settings import NemesisSpec
from kafka_trial.workloads.base import ClientContext, Lane
from kafka_trial.workloads.transactions import TxnWorker

from tests.fakes import FakeCluster


@pytest.fixture
def mock_boot() -> Iterator[str]:
    """The bootstrap of a librdkafka mock cluster that outlives the test's clients."""
    holder = Producer({"test.mock.num.brokers": 1, "log_level": 0})
    md = holder.list_topics(timeout=10)
    yield ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
    holder.flush(1)


@pytest.fixture
def ids() -> Iterator[list[str]]:
    """Registered ids, unregistered however the test ends (the registry is global)."""
    made: list[str] = []
    yield made
    for tid in made:
        TXN_IDS.unregister(tid)


def _register(ids: list[str], boot: str, *names: str) -> None:
    for tid in names:
        TXN_IDS.register(
            tid, "copier" if "copier" in tid else "producer", {"bootstrap.servers": boot}
        )
        # The session holding it: a client id of its own, as the workers name theirs.
        TXN_IDS.session(tid, 100 + len(ids))
        ids.append(tid)


def _hijack(tmp_path: Path, pick: int, package: HijackTxn | str = "hijack-txn") -> list[Any]:
    history = HistoryWriter(tmp_path / f"history-{pick}.jsonl", flush_s=0)
    name = package if isinstance(package, str) else package.name
    nem = Nemesis(FakeCluster(), history, NemesisSpec(faults=(name,)), "trial")
    applied = nem.apply(package, pick=pick)
    assert applied.heal is None  # one-shot: nothing outstanding, nothing for the heal to do
    history.close()
    return [o for o in read_history(history.path).ops if o.f == "hijack-txn"]


def test_the_pick_chooses_a_running_id_and_the_completion_records_the_grant(
    tmp_path: Path, mock_boot: str, ids: list[str]
) -> None:
    names = ("kt-r1-0", "kt-r1-1", "kt-r1-copier-0")
    _register(ids, mock_boot, *names)
    for pick in (3, 11):
        invoke, done = _hijack(tmp_path, pick)
        assert invoke.value == {"target": "transactional-id"}
        assert done.type == "ok", done
        want = random.Random(pick).choice(sorted(names))
        assert done.value["transactional_id"] == want
        # The session it fenced, as that session's sends name their client.
        assert done.value["client"] == 100 + names.index(want)
        assert done.value["workload"] == ("copier" if "copier" in want else "producer")
        assert done.value["init_returned"] is True and done.value["closed"] is True
        assert 0 <= done.value["init_s"] < 30
        # Read from librdkafka's own account of InitProducerId's answer.
        assert isinstance(done.value["producer_id"], int) and done.value["epoch"] >= 0
    # The same pick takes the same id: a replayed schedule hijacks the same client.
    (tmp_path / "again").mkdir()
    again = _hijack(tmp_path / "again", 3)
    assert again[1].value["transactional_id"] == random.Random(3).choice(sorted(names))


def test_fence_txn_id_is_the_same_package_recorded_as_hijack_txn(
    tmp_path: Path, mock_boot: str, ids: list[str]
) -> None:
    _register(ids, mock_boot, "kt-r4-0")
    assert build_package("fence-txn-id", NemesisSpec(), "t") == HijackTxn(name="fence-txn-id")
    invoke, done = _hijack(tmp_path, 0, "fence-txn-id")  # the ops read back are hijack-txn's
    assert invoke.value == {"target": "transactional-id"}
    assert done.type == "ok" and done.value["transactional_id"] == "kt-r4-0"
    assert done.value["client"] == 100
    with pytest.raises(TrialError, match=r"fence-txn-id takes over the transactional\.id"):
        build_spec({"nemesis": {"faults": ["fence-txn-id"]}})
    assert build_spec({"copier": {"workers": 1}, "nemesis": {"faults": ["fence-txn-id"]}})


def test_an_id_whose_session_has_not_started_names_no_client(
    tmp_path: Path, mock_boot: str, ids: list[str]
) -> None:
    # Registered as its worker starts, before its first init_transactions returned.
    TXN_IDS.register("kt-r5-0", "producer", {"bootstrap.servers": mock_boot})
    ids.append("kt-r5-0")
    _invoke, done = _hijack(tmp_path, 0)
    assert done.type == "ok" and "client" not in done.value


def test_no_running_transactional_client_is_info_with_the_reason(tmp_path: Path) -> None:
    assert TXN_IDS.live() == []
    _invoke, done = _hijack(tmp_path, 0)
    assert done.type == "info"
    assert "no transactional producer or copier is running" in (done.error or "")


def test_an_init_that_does_not_return_is_info_not_ok(tmp_path: Path, ids: list[str]) -> None:
    # Nothing listens on port 1: the coordinator is never found within the limit.
    _register(ids, "127.0.0.1:1", "kt-r2-0")
    _invoke, done = _hijack(tmp_path, 0, HijackTxn(init_s=1.0))
    assert done.type == "info"
    assert "init_transactions for kt-r2-0 failed after" in (done.error or "")
    assert "limit 1 s" in (done.error or "")


def test_it_is_built_from_the_catalog_and_the_report_says_what_it_did() -> None:
    assert build_package("hijack-txn", NemesisSpec(), "t") == HijackTxn()
    said = effect(
        "hijack-txn",
        "ok",
        {"transactional_id": "kt-r-0", "init_s": 0.12, "producer_id": 7, "epoch": 3},
    )
    assert (
        said == "kt-r-0 taken over: init_transactions returned in 0.12 s, epoch 3 (producer id 7)"
    )


def test_a_run_without_a_transactional_client_is_refused() -> None:
    with pytest.raises(TrialError, match=r"hijack-txn takes over the transactional\.id") as refused:
        build_spec({"nemesis": {"faults": ["hijack-txn"]}})
    assert "\n" not in str(refused.value).split(" -- fix")[0]  # one line
    assert build_spec({"producer": {"transactional": True}, "nemesis": {"faults": ["hijack-txn"]}})
    assert build_spec({"copier": {"workers": 1}, "nemesis": {"faults": ["hijack-txn"]}})


FENCED = KafkaError(KafkaError._FENCED, "Failed to end transaction: fenced", fatal=True)


class _Producer:
    """A transactional producer as the worker drives it: `fenced` ones refuse their
    commit, and every later call, with librdkafka's fatal _FENCED (its error for a
    transactional.id another producer took over); the others commit."""

    def __init__(self, fenced: bool, stop: threading.Event, commits: list[str]) -> None:
        self.fenced, self.stop, self.commits = fenced, stop, commits
        self.fatal = False

    def _check(self) -> None:
        if self.fatal:
            raise KafkaException(FENCED)

    def begin_transaction(self) -> None:
        self._check()

    def produce(self, *_a: Any, **_k: Any) -> None: ...

    def flush(self, *_a: Any) -> int:
        return 0

    def commit_transaction(self, *_a: Any) -> None:
        if self.fenced:
            self.fatal = True
        self._check()
        self.commits.append("committed")
        self.stop.set()  # one commit after the fence is enough to see

    def abort_transaction(self, *_a: Any) -> None:
        self._check()

    def poll(self, *_a: Any) -> int:
        self._check()
        return 0

    def purge(self, *_a: Any, **_k: Any) -> None: ...


def test_a_fenced_worker_records_info_and_goes_on_with_a_new_producer_under_its_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = build_spec({"producer": {"transactional": True, "batch": 2}, "topic": {"name": "t"}})
    h = HistoryWriter(tmp_path / "history.jsonl")
    ctx = ClientContext(h, lambda _lane: "127.0.0.1:1", run_id="r3")
    w = TxnWorker(ctx, Lane.of(ctx, 0), spec.producer, spec.topic, "kt-r3-0")
    commits: list[str] = []
    handed = iter([_Producer(True, ctx.stop, commits), _Producer(False, ctx.stop, commits)])
    registered: list[list[str]] = []

    sessions: list[list[int | None]] = []

    def new_producer() -> _Producer:
        registered.append([c.transactional_id for c in TXN_IDS.live()])
        sessions.append([c.client for c in TXN_IDS.live()])
        return next(handed)

    monkeypatch.setattr(w, "_new_producer", new_producer)
    w.run()
    h.close()
    # Registered while it ran, for the hijacker to find; gone once it ended.
    assert registered == [["kt-r3-0"], ["kt-r3-0"]]
    assert TXN_IDS.live() == []
    done = [o for o in read_history(h.path).ops if o.f == "txn" and o.type != "invoke"]
    # The fenced commit is info (it may have committed before the fence: not fail, and
    # never ok); the new producer's transaction, under a new process, commits.
    assert [(o.type, o.error) for o in done] == [("info", "_FENCED"), ("ok", None)]
    assert done[0].process != done[1].process
    assert {m["outcome"] for m in done[0].value} == {"info"}
    assert commits == ["committed"]
    # Each producer is a session of its own, named on its sends and, once its
    # init_transactions returned, in the registry: the one a hijack would fence.
    clients = [{m["client"] for m in o.value} for o in done]
    assert clients == [{0}, {1}]
    assert sessions == [[None], [0]]
    assert [m["seq"] for o in done for m in o.value] == [0, 1, 0, 1]
