"""report-data.json against the history read plainly: its time axis, the nemesis's and
the application's lanes (one scan of the history's text for both, each capped), and
the first reads past an example's position with their times."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from kafka_trial.spark_analysis import report_data as rd
from kafka_trial.spark_analysis.job import analyze

from tests.histories import TOPIC, Builder


def _run(run_dir: Path) -> Path:
    """Value 11 acknowledged at offset 1 while broker 1 is down and never read back,
    though a consumer and the drain read 12 past it; nemesis ops (one that did not
    take effect) and an app instance's lifecycle around it."""
    b = Builder(run_dir)
    b.h.invoke("app-0", "app-start", {"instance": 0})
    b.h.complete("ok", "app-0", "app-start", {"instance": 0, "pid": 4242})
    b.sends(0, [(10, 0, 0, "ok")])
    b.h.invoke("nemesis", "corrupt", {"target": "leader", "mode": "bitflip"})
    b.h.complete("info", "nemesis", "corrupt", None, "nothing corrupted: {'1': 'empty'}")
    b.nemesis("kill", {"target": "leader", "brokers": [1]})
    time.sleep(0.01)
    b.sends(0, [(11, 0, 1, "ok"), (12, 0, 2, "ok")])
    b.nemesis("start", {"brokers": [1]})
    b.poll(1, [(10, 0, 0), (12, 0, 2)])
    b.drain(2, [(10, 0, 0), (12, 0, 2)], at_end={0: 3})
    b.h.invoke("app-0", "app-exit", {"instance": 0})
    b.h.complete("ok", "app-0", "app-exit", {"instance": 0, "code": 0})
    return b.done()


def _ops(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "history.jsonl").read_text().splitlines()]


def _lane(ops: list[dict[str, Any]], which: str, cap: int) -> list[tuple[Any, ...]]:
    mine = [o for o in ops if str(o["process"]).startswith(which)]
    return [(o["index"], o["time"], o["type"], o["f"]) for o in mine][:cap]


def _data(spark: Any, run: Path) -> dict[str, Any]:
    analyze(run, report=True)
    return json.loads((run / "report-data.json").read_text())


@pytest.mark.parametrize("parser", ["native", "spark"])
def test_the_report_data_agrees_with_the_history(
    spark, tmp_path: Path, monkeypatch, parser: str
) -> None:
    """The lanes come from the native parse's Parquet where it parsed the history, and
    from the history's text where Spark did: the same file either way."""
    if parser == "spark":
        monkeypatch.setenv("KAFKA_TRIAL_NATIVE_PARSE", "0")
    run = _run(tmp_path / "run")
    ops = _ops(run)
    data = _data(spark, run)
    assert json.loads((run / "results.json").read_text())["analysis"]["parser"] == parser
    lines = [o for o in ops if o["process"] == "nemesis"]
    assert [o["value"] for o in data["nemesis"]] == [o["value"] for o in lines]
    assert (data["t0"], data["t1"]) == (ops[0]["time"], ops[-1]["time"])
    got = [(o["index"], o["time"], o["type"], o["f"]) for o in data["nemesis"]]
    assert got == _lane(ops, "nemesis", rd.MAX_NEMESIS) and len(got) == 6
    (untaken,) = [o for o in data["nemesis"] if o["type"] == "info"]
    assert untaken["error"].startswith("nothing corrupted")
    apps = [(o["index"], o["time"], o["type"], o["f"]) for o in data["app_events"]]
    assert apps == _lane(ops, "app-", rd.MAX_NEMESIS) and len(apps) == 4
    assert {o["process"] for o in data["app_events"]} == {"app-0"}
    # 11 is lost at offset 1: the consumer's poll and then the drain read 12 past it,
    # each at the time its op completed.
    past = data["witnesses"]["past_position"]
    done = {o["index"]: o["time"] for o in ops if o["type"] == "ok"}
    assert [(r["p_topic"], r["p_offset"], r["value"], r["offset"]) for r in past] == [
        (TOPIC, 1, 12, 2),
        (TOPIC, 1, 12, 2),
    ]
    assert [r["time"] for r in past] == [done[r["index"]] for r in past]
    assert [r.get("role") for r in past] == [None, "drain"]


def test_each_lane_is_capped_on_its_own(spark, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(rd, "MAX_NEMESIS", 3)
    run = _run(tmp_path / "run")
    ops = _ops(run)
    data = _data(spark, run)
    got = [(o["index"], o["time"], o["type"], o["f"]) for o in data["nemesis"]]
    assert got == _lane(ops, "nemesis", 3)
    apps = [(o["index"], o["time"], o["type"], o["f"]) for o in data["app_events"]]
    assert apps == _lane(ops, "app-", 3)


def test_the_aggregates_agree_with_the_history(spark, tmp_path: Path) -> None:
    """Throughput, latency and the offsets' envelope, now one job's branches, against
    the history read plainly: each client completion paired with its invoke."""
    run = _run(tmp_path / "run")
    ops = _ops(run)
    data = _data(spark, run)
    t0, bucket_ns = data["t0"], data["bucket_s"] * 1_000_000_000
    last: dict[Any, dict[str, Any]] = {}
    done: Counter[tuple[int, str, str]] = Counter()
    waits: dict[tuple[int, str], list[float]] = defaultdict(list)
    for o in ops:
        p = str(o["process"])
        if p == "nemesis" or p.startswith("app-"):
            continue
        prev, last[p] = last.get(p), o
        if o["type"] != "invoke" and prev is not None and prev["type"] == "invoke":
            b = (o["time"] - t0) // bucket_ns
            done[(b, o["f"], o["type"])] += 1
            waits[(b, o["f"])].append((o["time"] - prev["time"]) / 1e6)
    assert {(r["bucket"], r["f"], r["type"]): r["n"] for r in data["throughput"]} == done
    assert {f for _, f, _ in done} == {"send", "poll"}
    got = {(r["bucket"], r["f"]): (r["n"], r["max"]) for r in data["latency_ms"]}
    assert got == {k: (len(v), max(v)) for k, v in waits.items()}
    assert all(r["p50"] <= r["p99"] <= r["max"] for r in data["latency_ms"])
    # Acknowledged 10, 11, 12 at offsets 0-2; read 10 and 12, by the poll and the
    # drain; all in the first bucket (the run is shorter than a bucket).
    envelope = {
        (r["kind"], r["topic"], r["partition"], r["bucket"]): (r["lo"], r["hi"], r["n"])
        for r in data["offsets"]
    }
    assert envelope == {("acked", TOPIC, 0, 0): (0, 2, 3), ("read", TOPIC, 0, 0): (0, 2, 4)}
