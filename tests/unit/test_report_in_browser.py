"""The HTML report in real headless Chromium: a planted lossy history's report loads
with no console message and no request leaving the file, and shows the lost value's
witness and the fault bands. The helper is first shown to catch both."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.report.html import write_report
from kafka_trial.spark_analysis.job import analyze

from tests.browser import load
from tests.histories import lossy


def test_the_browser_check_catches_console_errors_and_requests(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="http://203.0.113.9/x.png">'
        '<script>console.error("planted")</script></body></html>'
    )
    got = load(page)
    assert any("planted" in c for c in got.console), got.console
    assert got.requests == ["http://203.0.113.9/x.png"], got.requests


def test_a_lossy_report_in_the_browser(spark, tmp_path: Path) -> None:
    run = lossy(tmp_path / "lossy")
    analyze(run, report=True)
    page = write_report(run)
    shot = tmp_path / "report.png"
    got = load(page, screenshot=shot)
    assert got.console == [] and got.requests == [], (got.console, got.requests)
    assert 'id="w-lost-write-1"' in got.dom and "value=11" in got.dom
    assert got.dom.count('class="fault-band"') >= 2
    assert shot.stat().st_size > 10_000  # a page was drawn
