"""The analysis's last stage: its `Results`, written as results.json, with
report-data.json first when a report is wanted; and the clock of its stages
(AnalysisFacts.stages_s)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES, ANOMALY_TYPES, with_defaults
from kafka_trial.checkers.results import (
    AnalysisFacts,
    AnomalyResult,
    DamagedLine,
    HistoryHealth,
    Results,
    Stats,
)
from kafka_trial.checkers.settings import CheckSpec
from kafka_trial.checkers.verdict import decide
from kafka_trial.contracts.log import status
from kafka_trial.contracts.report_data import REPORT_DATA_FILE
from kafka_trial.spark_analysis.read import Frames, HistorySource
from kafka_trial.spark_analysis.report_data import report_data
from pyspark.sql import SparkSession


class StageClock:
    """The seconds of each stage of one analysis (AnalysisFacts.stages_s)."""

    def __init__(self, session_s: float) -> None:
        self.seconds: dict[str, float] = {"session": round(session_s, 3)}
        self._mark = time.monotonic()

    def done(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = round(now - self._mark, 3)
        self._mark = now


def results(
    src: HistorySource,
    fr: Frames,
    anomalies: dict[str, dict[str, Any]],
    st: dict[str, Any],
    problems: list[str],
    check: CheckSpec,
    tail: str,
    facts: AnalysisFacts,
) -> Results:
    """The verdict (checkers.verdict.decide) with everything it rests on."""
    allowed = with_defaults(check.allowed)
    verdict = decide(anomalies, allowed, problems)
    return Results(
        valid=verdict.pop("valid"),
        anomalies={
            name: AnomalyResult(**anomalies[name], definition=ANOMALIES[name].definition)
            for name in ANOMALY_TYPES
        },
        **verdict,
        allowed=allowed,
        stats=Stats(**st),
        history=HistoryHealth(
            path=str(src.local) if src.local is not None else src.uri,
            last_line=tail,  # type: ignore[arg-type]
            damaged_lines=fr.damaged,
            damaged_examples=tuple(
                DamagedLine(index=i, line=line) for i, line in fr.damaged_examples
            ),
            open_invokes=fr.open_invokes,
        ),
        analysis=facts,
    )


def write_results(
    spark: SparkSession,
    src: HistorySource,
    fr: Frames,
    results: Results,
    report: bool,
    t0: float,
    stages: StageClock,
) -> Results:
    """results.json, and with `report` report-data.json first (its time counted in)."""
    src.out_dir.mkdir(parents=True, exist_ok=True)
    if report:
        status("analysis: aggregating the report's data")
        data = report_data(spark, fr, src.uri, results.anomalies)
        _write_text(src.out_dir / REPORT_DATA_FILE, data.to_json())
        total = round(time.monotonic() - t0, 3)
        stages.done("report_data")
        facts = results.analysis.model_copy(update={"total_s": total, "stages_s": stages.seconds})
        results = results.model_copy(update={"analysis": facts})
    _write_text(src.out_dir / "results.json", results.to_json())
    return results


def _write_text(path: Path, text: str) -> None:
    # Written whole or not at all: a report never reads half a file.
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
