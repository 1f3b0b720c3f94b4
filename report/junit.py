"""JUnit XML from verdicts, for CI systems: one testsuite per run, one testcase per
check.

A forbidden anomaly that was found is a failure naming it, with its count and two
witnesses; an allowed one passes with its count in system-out; a check that could
not decide is an error, and so is a history that cannot decide the verdict (its
problems are the message). Rendered from `Results` alone.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

from kafka_trial.checkers.anomalies import ANOMALY_TYPES
from kafka_trial.checkers.results import AnomalyResult, Results

WITNESSES = 2


def _witnesses(a: AnomalyResult) -> str:
    shown = [json.dumps(ex, separators=(",", ":")) for ex in a.examples[:WITNESSES]]
    return "; ".join(shown) if shown else "(no example recorded)"


def _case(suite: ET.Element, name: str, check: str, results: Results) -> str:
    """One check's testcase; returns what it counts as: pass, failure or error."""
    a = results.anomalies.get(check) or AnomalyResult(
        count=None, unit="", error="missing from results.json"
    )
    case = ET.SubElement(suite, "testcase", classname=f"kafka-trial.{name}", name=check, time="0")
    if a.count is None and a.skipped:
        ET.SubElement(case, "skipped", message=f"{check}: not checked: {a.skipped}")
        return "skipped"
    if a.count is None:
        err = ET.SubElement(case, "error", message=f"{check}: could not decide", type="undecided")
        err.text = str(a.error or a.undecided or "")
        return "error"
    if a.count and a.undecided and check not in results.allowed:
        err = ET.SubElement(case, "error", message=f"{check}: {a.undecided}", type="undecided")
        err.text = f"{a.count} {a.unit}, which prove nothing here: {a.undecided}"
        return "error"
    if a.count and check not in results.allowed:
        msg = f"{check}: {a.count} {a.unit} found, forbidden by this config"
        fail = ET.SubElement(
            case, "failure", message=f"{msg}; e.g. {_witnesses(a)}", type="forbidden-anomaly"
        )
        fail.text = f"{results.definition(check)}\n{msg}\nwitnesses: {_witnesses(a)}"
        return "failure"
    out = ET.SubElement(case, "system-out")
    out.text = f"{check}: {a.count}" + (" (allowed by this config)" if a.count else "")
    return "pass"


def testsuite(name: str, results: Results) -> ET.Element:
    suite = ET.Element("testsuite", name=name)
    props = ET.SubElement(suite, "properties")
    ET.SubElement(
        props, "property", name="faults_injected", value=str(results.stats.faults_injected)
    )
    ET.SubElement(props, "property", name="verdict", value=results.word)
    kinds = [_case(suite, name, check, results) for check in ANOMALY_TYPES]
    failures, errors = kinds.count("failure"), kinds.count("error")
    problems = list(results.problems)
    case = ET.SubElement(suite, "testcase", classname=f"kafka-trial.{name}", name="history")
    if results.valid not in (True, False) or problems:
        errors += 1
        err = ET.SubElement(
            case,
            "error",
            message="the history cannot decide the verdict: " + "; ".join(problems)
            if problems
            else "the verdict is unknown",
            type="unknown-verdict",
        )
        err.text = "\n".join(problems)
    suite.set("tests", str(len(ANOMALY_TYPES) + 1))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(kinds.count("skipped")))
    suite.set("time", str(float(results.analysis.total_s)))
    return suite


def write_junit(path: Path, runs: list[tuple[str, Results]]) -> Path:
    """One <testsuites> file with a testsuite per (run name, results)."""
    root = ET.Element("testsuites", name="kafka-trial")
    for name, results in runs:
        root.append(testsuite(name, results))
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in root)))
    ET.indent(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    ET.ElementTree(root).write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, path)
    return path
