"""report-data.json against the history read plainly: its time axis, the nemesis's and
the application's lanes (one scan of the history's text for both, each capped), and
the first reads past an example's position with their times."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

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


def test_the_report_data_agrees_with_the_history(spark, tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    ops = _ops(run)
    data = _data(spark, run)
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
