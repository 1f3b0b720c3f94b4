"""fenced-write: the Spark check against tests/reference_checker.py on random small
histories of transactional clients whose ids are taken over while they run.

The main differential test's histories hold no nemesis op (its batch file tells
histories apart by process), so these are generated here: each history's processes,
clients and values are its own, and both sides judge the whole batch file at once,
as sets of values. A history interleaves transactions of a few clients (invoked and
completed apart, so a takeover falls between a transaction's invoke and its end),
takeovers that name a client, name none or did not take, values sent twice (a
copier's retry), a consumer's reads (which prove nothing) and the final drain's.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kafka_trial.contracts.history import HistoryWriter

from tests import reference_checker as ref

pytestmark = pytest.mark.filterwarnings("ignore")

PER_BATCH = 300
SEEDS = (1, 2)
PROCESSES = 4  # client workers per history; their client is fixed, their process moves on


def _send(v: int, client: int, seq: int, done: str | None = None, offset: int | None = None):
    m: dict[str, Any] = {"op": "send", "topic": "t", "partition": v % 2, "value": v}
    m |= {"client": client, "seq": seq}
    if done is not None:
        m |= {"offset": offset, "outcome": done}
    return m


class _History:
    """One random history, written into the batch's file."""

    def __init__(self, h: HistoryWriter, rng: random.Random, i: int) -> None:
        self.h, self.rng, self.i = h, rng, i
        self.values = iter(range(i * 1000, i * 1000 + 1000))
        self.sent: list[int] = []
        self.open: dict[int, tuple[int, list[dict[str, Any]]]] = {}  # worker -> op
        self.process = {w: i * 100 + w for w in range(PROCESSES)}
        self.client = {w: i * 100 + w for w in range(PROCESSES)}
        self.seq = Counter[int]()

    def _invoke(self, w: int) -> None:
        sends = []
        for _ in range(self.rng.randint(1, 2)):
            # A value sent again: a copier's retry of the same input.
            again = self.sent and self.rng.random() < 0.15
            v = self.rng.choice(self.sent) if again else next(self.values)
            sends.append(_send(v, self.client[w], self.seq[w]))
            self.seq[w] += 1
            self.sent.append(v)
        self.h.invoke(self.process[w], "txn", sends)
        self.open[w] = (self.process[w], sends)

    def _complete(self, w: int) -> None:
        process, sends = self.open.pop(w)
        outcome = self.rng.choice(["ok", "fail", "info", "info"])
        done = [{**m, "offset": self.rng.randint(0, 40), "outcome": outcome} for m in sends]
        self.h.complete(outcome, process, "txn", done, None if outcome == "ok" else "x")
        if outcome == "info":
            # A new process and producer session, as the workers go on after info.
            self.process[w] += PROCESSES
            self.client[w] += PROCESSES
            self.seq[w] = 0

    def _hijack(self) -> None:
        self.h.invoke("nemesis", "hijack-txn", {"target": "transactional-id"})
        took = self.rng.random() < 0.8
        value: dict[str, Any] = {"target": "transactional-id"}
        if took:
            value |= {"transactional_id": f"kt-{self.i}", "init_returned": True}
            if self.rng.random() < 0.9:
                value["client"] = self.client[self.rng.randrange(PROCESSES)]
        self.h.complete("ok" if took else "info", "nemesis", "hijack-txn", value)

    def _reads(self, process: int, role: str | None) -> None:
        read = [v for v in set(self.sent) if self.rng.random() < 0.5]
        recs = [{"topic": "t", "partition": v % 2, "offset": v % 50, "value": v} for v in read]
        micro = {"op": "poll"} if role is None else {"op": "poll", "role": role}
        self.h.invoke(process, "poll", [micro])
        self.h.complete("ok", process, "poll", [{**micro, "records": recs}])

    def write(self) -> None:
        for _ in range(self.rng.randint(4, 14)):
            w = self.rng.randrange(PROCESSES)
            roll = self.rng.random()
            if roll < 0.15:
                self._hijack()
            elif w in self.open:
                self._complete(w)
            else:
                self._invoke(w)
        self._reads(self.i * 100 + 98, None)  # a consumer's reads prove no commit
        self._reads(self.i * 100 + 99, "drain")
        # Some transactions never complete: the history ends with them open.


def _batch(seed: int, path: Path) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    h = HistoryWriter(path, flush_s=0)
    for i in range(PER_BATCH):
        _History(h, rng, i).write()
    h.close()
    return [json.loads(line) for line in path.read_text().splitlines()]


def _spark_values(spark: Any, path: Path) -> set[int]:
    from kafka_trial.spark_analysis.checks.runner import tagged_checks
    from kafka_trial.spark_analysis.facts.shared_frames import AnalysisFrames
    from kafka_trial.spark_analysis.read.history_frames import load

    plan = AnalysisFrames(load(spark, str(path)))
    try:
        (rows,) = tagged_checks(plan, ["fenced-write"])
        return {json.loads(r["detail"])["value"] for r in rows.collect()}
    finally:
        plan.release()


@pytest.mark.parametrize("seed", SEEDS)
def test_spark_agrees_with_the_reference_on_fenced_writes(
    spark: Any, tmp_path: Path, seed: int
) -> None:
    path = tmp_path / "history.jsonl"
    ops = _batch(seed, path)
    want = ref.fenced_write(ops)
    got = _spark_values(spark, path)
    assert got == want, f"only Spark {sorted(got - want)}, only reference {sorted(want - got)}"
    # Not vacuous: the batch flags some values and judges others that it does not flag
    # (sent after a fence by another session, or before it, or never read).
    txn_values = {m["value"] for o in ops if o["f"] == "txn" for m in o["value"]}
    assert 10 <= len(want) < len(txn_values) // 2, (len(want), len(txn_values))


def test_the_reference_judges_only_what_the_fence_rules_out(tmp_path: Path) -> None:
    """Pure Python: the reference's own plant and twins."""
    path = tmp_path / "h.jsonl"
    h = HistoryWriter(path, flush_s=0)
    h.invoke(0, "txn", [_send(1, 7, 0)])  # invoked before the fence
    h.invoke("nemesis", "hijack-txn", {"target": "transactional-id"})
    h.complete("ok", "nemesis", "hijack-txn", {"transactional_id": "x", "client": 7})
    h.complete("info", 0, "txn", [_send(1, 7, 0, "info", 0)], "_FENCED")
    h.invoke(1, "txn", [_send(2, 7, 1)])  # after it, by the fenced session
    h.complete("info", 1, "txn", [_send(2, 7, 1, "info", 1)], "_FENCED")
    h.invoke(2, "txn", [_send(3, 8, 0)])  # after it, by another session
    h.complete("ok", 2, "txn", [_send(3, 8, 0, "ok", 2)])
    h.invoke(9, "poll", [{"op": "poll", "role": "drain"}])
    recs = [{"topic": "t", "partition": v % 2, "offset": v - 1, "value": v} for v in (1, 2, 3)]
    h.complete("ok", 9, "poll", [{"op": "poll", "role": "drain", "records": recs}])
    h.close()
    assert ref.fenced_write([json.loads(x) for x in path.read_text().splitlines()]) == {2}
