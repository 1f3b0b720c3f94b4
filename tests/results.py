"""Results made by hand, for tests of what reads them (JUnit, the text verdict, the
campaign): every registered type, with the counts a test names."""

from __future__ import annotations

from typing import Any

from kafka_trial.checkers.anomalies import ANOMALIES, ANOMALY_TYPES
from kafka_trial.checkers.results import Results


def made_results(
    valid: Any = True,
    counts: dict[str, int | None] | None = None,
    allowed: tuple[str, ...] = (),
    problems: tuple[str, ...] = (),
    **extra: Any,
) -> Results:
    """counts: anomaly type -> count (None: the check crashed); each found one gets
    three witnesses."""
    anomalies: dict[str, dict[str, Any]] = {}
    for n in ANOMALY_TYPES:
        c = (counts or {}).get(n, 0)
        a: dict[str, Any] = {"count": c, "unit": ANOMALIES[n].unit, "examples": []}
        if c:
            a["examples"] = [{"value": 7}, {"value": 8}, {"value": 9}]
        if c is None:
            a["error"] = "Py4JError: boom"
        anomalies[n] = a
    return Results.model_validate(
        {
            "valid": valid,
            "anomalies": anomalies,
            "allowed": allowed,
            "problems": problems,
            "history": {"path": "history.jsonl", "last_line": "ok"},
            "analysis": {"spark_master": "local[*]"},
            **extra,
        }
    )


def ran(res: Results | dict[str, Any]) -> dict[str, int | None]:
    """Each anomaly type's count in results (Results, or results.json as a dict),
    leaving out the checks that did not run (`skipped`: the cycle checks of a history
    with no transaction)."""
    if isinstance(res, Results):
        return {k: a.count for k, a in res.anomalies.items() if not a.skipped}
    return {k: v["count"] for k, v in res["anomalies"].items() if not v.get("skipped")}
