"""One way from a history to every output: judge it (or read the verdict already
written), print the text verdict, write the HTML report and, if asked, JUnit.

`run`, `analyze`, `report`, `finish`, `campaign` and the pytest plugin all come here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafka_trial.checkers.results import Results
from kafka_trial.contracts.report_data import REPORT_DATA_FILE
from kafka_trial.report.html import write_report
from kafka_trial.report.junit import write_junit
from kafka_trial.report.text import render
from kafka_trial.spark_analysis.job import analyze


@dataclass(frozen=True)
class Judged:
    results: Results | None  # None: nothing to judge and no verdict written before
    run_dir: Path  # what the run wrote (spec.json, logs, ...)
    out_dir: Path  # where the analysis wrote results.json and the report
    report: Path | None  # None: the HTML report failed (said on stderr)

    @property
    def exit_code(self) -> int:
        return 2 if self.results is None else self.results.exit_code


def _dirs(results: Results) -> tuple[Path, Path]:
    """(run_dir, out_dir): a local history's directory holds the run's other files;
    a URI's run has none here, so both are where the results went."""
    out_dir = Path(results.analysis.results_file).parent
    history = results.history.path
    local = "://" not in history and Path(history).is_file()
    return (Path(history).parent if local else out_dir), out_dir


def _html(run_dir: Path, out_dir: Path) -> Path | None:
    """A report that fails to build must not cost the verdict: it is said in one line,
    and the exit code stays the verdict's."""
    try:
        return write_report(run_dir, out_dir)
    except Exception as e:
        print(
            f"kafka-trial: the HTML report failed ({type(e).__name__}: {e}) -- fix: "
            f"rerun `kafka-trial report {out_dir}` and file an issue with the error",
            file=sys.stderr,
        )
        return None


def judge(
    target: str | Path,
    *,
    spark_master: str | None = None,
    out_dir: Path | None = None,
    reuse: bool = False,
    junit: Path | None = None,
    say: Callable[[str], None] | None = print,
    one_shot: bool = False,
) -> Judged:
    """Judge `target` (a run directory, a history, a URI) and write every output.

    reuse: take the verdict already in the run directory when there is one (what
    `kafka-trial report` does), and judge the history only when there is none.
    say: where the text verdict and the output paths go; None for silence.
    one_shot: the process judges this one history and exits (analyze's `one_shot`)."""
    existing = None if "://" in str(target) else Path(target) / "results.json"
    history = Path(target) / "history.jsonl" if existing is not None else None
    results: Results | None
    if (
        reuse
        and existing is not None
        and existing.is_file()
        and (existing.parent / REPORT_DATA_FILE).is_file()
    ):
        results = Results.from_json(existing)
        run_dir, out = Path(target), Path(target)
    elif reuse and history is not None and not history.is_file():
        # Nothing to judge again: whatever verdict there is, the page shows it.
        results = Results.from_json(existing) if existing and existing.is_file() else None
        run_dir, out = Path(target), Path(target)
    else:
        if reuse and say is not None:
            say("analyzing the history first (the report draws on the analysis)")
        results = analyze(target, spark_master, out_dir=out_dir, report=True, one_shot=one_shot)
        run_dir, out = _dirs(results)
    if say is not None:
        say(
            render(results, run_dir)
            if results is not None
            else "verdict: UNKNOWN (no results.json and no history.jsonl to analyze)"
        )
    report = _html(run_dir, out)
    if say is not None and report is not None:
        say(f"report: {report}")
    if junit is not None and results is not None:
        path = write_junit(junit, [(run_dir.name, results)])
        if say is not None:
            say(f"junit: {path}")
    return Judged(results, run_dir, out, report)
