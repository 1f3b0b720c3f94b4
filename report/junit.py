"""JUnit XML from verdicts, for CI systems: one testsuite per run, one testcase per
check.

A forbidden anomaly that was found is a failure naming it, with its count and two
witnesses; an allowed one passes with its count in system-out; a check that could
not decide is an error, and so is a history that cannot decide the verdict (its
problems are the message). Rendered from results.json alone.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES, ANOMALY_TYPES

WITNESSES = 2


def _witnesses(a: dict[str, Any]) -> str:
    shown = [json.dumps(ex, separators=(",", ":")) for ex in (a.get("examples") or [])[:WITNESSES]]
    return "; ".join(shown) if shown else "(no example recorded)"


def testsuite(name: str, results: dict[str, Any]) -> ET.Element:
    allowed = set(results.get("allowed", []))
    anomalies = results.get("anomalies", {})
    suite = ET.Element("testsuite", name=name)
    failures = errors = 0
    for check in ANOMALY_TYPES:
        a = anomalies.get(check) or {"count": None, "error": "missing from results.json"}
        case = ET.SubElement(
            suite, "testcase", classname=f"kafka-trial.{name}", name=check, time="0"
        )
        count = a.get("count")
        if count is None:
            errors += 1
            err = ET.SubElement(
                case, "error", message=f"{check}: could not decide", type="undecided"
            )
            err.text = str(a.get("error") or a.get("undecided") or "")
        elif count and check not in allowed:
            failures += 1
            msg = f"{check}: {count} {a.get('unit', '')} found, forbidden by this config"
            fail = ET.SubElement(
                case, "failure", message=f"{msg}; e.g. {_witnesses(a)}", type="forbidden-anomaly"
            )
            fail.text = f"{ANOMALIES[check].definition}\n{msg}\nwitnesses: {_witnesses(a)}"
        else:
            out = ET.SubElement(case, "system-out")
            out.text = f"{check}: {count}" + (" (allowed by this config)" if count else "")
    problems = results.get("problems") or []
    case = ET.SubElement(suite, "testcase", classname=f"kafka-trial.{name}", name="history")
    if results.get("valid") not in (True, False) or problems:
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
    suite.set("skipped", "0")
    suite.set("time", str(_get_time(results)))
    return suite


def _get_time(results: dict[str, Any]) -> float:
    t = (results.get("analysis") or {}).get("total_s")
    return float(t) if isinstance(t, (int, float)) else 0.0


def write_junit(path: Path, runs: list[tuple[str, dict[str, Any]]]) -> Path:
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
