"""The text verdict printed after run/analyze, from hand-made Results: an undecided
count is not called forbidden, and an empty history reads cleanly."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.checkers.results import Results
from kafka_trial.report.html import write_report
from kafka_trial.report.text import render

from tests.results import made_results


def _undecided() -> Results:
    made = made_results(
        "unknown", {"unseen": 14400, "lost-write": 2}, problems=("the final drain never ran",)
    ).to_dict()
    made["anomalies"]["unseen"]["undecided"] = "no drain read the partitions to their end"
    return Results.model_validate(made)


def _line(text: str, name: str) -> str:
    return next(ln for ln in text.splitlines() if ln.strip().startswith(name))


def test_an_unknown_verdict_does_not_call_an_undecided_count_forbidden(tmp_path: Path) -> None:
    text = render(_undecided(), tmp_path)
    assert text.startswith("verdict: UNKNOWN")
    assert _line(text, "unseen").endswith(
        "14400  (undecided: no drain read the partitions to their end)"
    )
    assert _line(text, "lost-write").endswith("2  <-- forbidden")  # decided, and forbidden


def test_the_html_counts_do_not_call_an_undecided_count_forbidden(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text(_undecided().to_json())
    html = write_report(tmp_path).read_text()
    counts = html[html.index('<table class="counts">') :]
    counts = counts[: counts.index("</table>")]
    assert '"#a-unseen">unseen</a></td><td>14400</td><td>undecided</td>' in counts
    assert '"#a-lost-write">lost-write</a></td><td>2</td><td>FORBIDDEN</td>' in counts


def test_an_empty_history_reads_cleanly(tmp_path: Path) -> None:
    empty = made_results("unknown", problems=("the history is empty: nothing was tested",))
    text = render(empty, tmp_path)
    assert "  sends: 0 attempted; records read 0;" in text
    assert ", ;" not in text and "attempted, ;" not in text
    some = made_results(True, stats={"sends_attempted": 3, "send_outcomes": {"ok": 2, "info": 1}})
    assert "  sends: 3 attempted (info 1, ok 2); records read 0;" in render(some, tmp_path)
