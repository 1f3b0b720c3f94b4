"""The application on trial's checks (issue 41): each app-output anomaly planted once
beside its clean twin, the declared guarantee's policy, and what the history cannot
decide (an app that did not catch up, outputs without an id, an output not drained).

The input is topic `t` (values 1-3 in partition 0, 4-5 in partition 1), the output
`t-out`, whose records carry their input's id as their value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kafka_trial.checkers.anomalies import ANOMALIES, NEED_WORDS
from kafka_trial.checkers.app_guarantees import app_allows
from kafka_trial.checkers.results import Results
from kafka_trial.contracts.errors import TrialError
from kafka_trial.spark_analysis.check_settings import read_check_settings
from kafka_trial.spark_analysis.job import analyze

from tests.histories import APP_OUT, app_inputs
from tests.results import ran

OUT = APP_OUT
APP = ("app-output-lost", "app-output-duplicate", "app-output-unexpected", "app-output-reorder")
# The clean output: each input once, partition for partition, in input order.
CLEAN_OUT = [(1, 0, 0), (2, 0, 1), (3, 0, 2), (4, 1, 0), (5, 1, 1)]


def app_run(
    tmp_path: Path,
    outputs: list[tuple[int | None, int, int]],
    guarantee: str = "exactly-once",
    per_key_order: bool = True,
    committed: dict[int, int] | None = None,
    out_ends: dict[int, int] | None = None,
) -> Path:
    """The app's run: five acknowledged inputs, drained; the app started, its group
    committed `committed` (default: past every input), and the output drain read
    `outputs` (value, partition, offset) of t-out, to its end at `out_ends` (default:
    one past each partition's last output)."""
    b = app_inputs(tmp_path, guarantee, per_key_order, committed)
    if out_ends is None:
        out_ends = {p: 1 + max(o for _, q, o in outputs if q == p) for _, p, _ in outputs}
    done: dict[str, Any] = {
        "op": "poll",
        "role": "app-output",
        "records": [{"topic": OUT, "partition": p, "offset": o, "value": v} for v, p, o in outputs],
        "at_end": [{"topic": OUT, "partition": p, "offset": e} for p, e in out_ends.items()],
    }
    b.h.invoke(7, "poll", [{"op": "poll", "role": "app-output"}])
    b.h.complete("ok", 7, "poll", [done])
    return b.done()


def found(res: Any) -> dict[str, int]:
    """The non-zero counts."""
    return {k: v for k, v in ran(res).items() if v}


# ------------------------------------------------------------- the registry and policy


def test_the_app_anomalies_need_an_app() -> None:
    assert NEED_WORDS["app"] == "application on trial"
    for name in APP:
        assert ANOMALIES[name].needs == "app" and not ANOMALIES[name].allowed_by_default
    assert ANOMALIES["app-output-lost"].proof == "absence"


def test_the_declared_guarantee_decides_what_is_allowed() -> None:
    assert app_allows("exactly-once", True) == ()
    assert app_allows("at-least-once", True) == ("app-output-duplicate",)
    assert app_allows("at-most-once", True) == ("app-output-lost",)
    assert app_allows("exactly-once", False) == ("app-output-reorder",)
    assert app_allows("at-least-once", False) == ("app-output-duplicate", "app-output-reorder")
    with pytest.raises(ValueError, match="exactly-once"):
        app_allows("maybe-once", True)


def test_the_analysis_allows_what_the_spec_s_guarantee_allows(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    app = {"command": "my-app", "guarantee": "at-least-once"}
    spec.write_text(json.dumps({"check": {"allowed": ["unseen"]}, "app": app}))
    assert read_check_settings(spec).allowed == (
        "unseen",
        "app-output-duplicate",
        "app-output-reorder",
    )
    # No command and no image: no app, nothing more allowed.
    spec.write_text(json.dumps({"app": {"guarantee": "at-most-once"}}))
    assert read_check_settings(spec).allowed == ()
    spec.write_text(json.dumps({"app": {"image": "mine:1"}}))
    with pytest.raises(TrialError, match=r"app\.guarantee is not set"):
        read_check_settings(spec)


# ------------------------------------------------------------- planted, and the clean twin


def test_clean_app_run_finds_nothing(spark, tmp_path: Path) -> None:
    """The twin of every planted history below: the app's outputs carry input values,
    yet no input check takes them for reads (no duplicate, unexpected, lost-write)."""
    res = analyze(app_run(tmp_path, CLEAN_OUT))
    assert found(res) == {}
    c = ran(res)
    assert c["duplicate"] == c["unexpected"] == c["lost-write"] == c["vanished-read"] == 0
    assert res.valid is True, res.problems
    assert res.stats.records_read == 5  # the input drain's records only


def test_app_output_lost(spark, tmp_path: Path) -> None:
    """Input 2 was committed past and never output: INVALID for exactly-once."""
    res = analyze(app_run(tmp_path, [(1, 0, 0), (3, 0, 1), (4, 1, 0), (5, 1, 1)]))
    assert found(res) == {"app-output-lost": 1}
    (ex,) = res.anomalies["app-output-lost"].examples
    assert (ex["value"], ex["partition"], ex["offset"], ex["committed"]) == (2, 0, 1, 3)
    assert res.valid is False and res.forbidden_seen == ("app-output-lost",)
    assert "committed partition 0 past offset 1" in (ANOMALIES["app-output-lost"].explain(ex) or "")


def test_at_most_once_may_lose_an_output(spark, tmp_path: Path) -> None:
    run = app_run(tmp_path, [(1, 0, 0), (3, 0, 1), (4, 1, 0), (5, 1, 1)], "at-most-once")
    res = analyze(run)
    assert found(res) == {"app-output-lost": 1}
    assert res.valid is True and "app-output-lost" in res.allowed
    assert Results.from_json(run / "results.json").allowed[:1] == ("app-output-lost",)


def test_app_output_duplicate(spark, tmp_path: Path) -> None:
    """Input 1 output again after 3 (a redelivery): INVALID for exactly-once; not a
    reorder (only first outputs count), and no input duplicate."""
    res = analyze(app_run(tmp_path, [*CLEAN_OUT, (1, 0, 3)]))
    assert found(res) == {"app-output-duplicate": 1}
    (ex,) = res.anomalies["app-output-duplicate"].examples
    assert ex["value"] == 1 and ex["copies"] == 2
    assert res.valid is False


def test_at_least_once_may_duplicate_an_output(spark, tmp_path: Path) -> None:
    res = analyze(app_run(tmp_path, [*CLEAN_OUT, (1, 0, 3)], "at-least-once"))
    assert found(res) == {"app-output-duplicate": 1}
    assert res.valid is True and res.allowed_seen == ("app-output-duplicate",)


def test_app_output_unexpected(spark, tmp_path: Path) -> None:
    """An output carrying 99, which nobody sent: no input `unexpected` either."""
    res = analyze(app_run(tmp_path, [*CLEAN_OUT, (99, 1, 2)], "at-least-once"))
    assert found(res) == {"app-output-unexpected": 1}
    (ex,) = res.anomalies["app-output-unexpected"].examples
    assert (ex["value"], ex["topic"], ex["partition"], ex["offset"]) == (99, OUT, 1, 2)
    assert res.valid is False


def test_app_output_reorder(spark, tmp_path: Path) -> None:
    """3 before 2 in one output partition, one key (input partition 0)."""
    out = [(1, 0, 0), (3, 0, 1), (2, 0, 2), (4, 1, 0), (5, 1, 1)]
    res = analyze(app_run(tmp_path / "ordered", out))
    assert found(res) == {"app-output-reorder": 1}
    (ex,) = res.anomalies["app-output-reorder"].examples
    assert (ex["prev_value"], ex["value"], ex["key_partition"]) == (3, 2, 0)
    assert res.valid is False
    # Without per-key order declared, reordering is the app's right.
    res = analyze(app_run(tmp_path / "unordered", out, per_key_order=False))
    assert found(res) == {"app-output-reorder": 1} and res.valid is True


# ------------------------------------------------------------- what cannot be decided


def test_an_app_that_did_not_catch_up_is_unknown_not_lost(spark, tmp_path: Path) -> None:
    """The group committed partition 0 only to 1: 2 and 3 are missing, but the app may
    not have got to them yet."""
    run = app_run(tmp_path, [(1, 0, 0), (4, 1, 0), (5, 1, 1)], committed={0: 1, 1: 2})
    res = analyze(run)
    assert found(res) == {}
    assert res.valid == "unknown"
    (problem,) = res.problems
    assert problem.startswith("2 input value(s) that must have committed are in no app output")
    assert "t/0: 2 from offset 1, committed 1" in problem and "did not catch up" in problem


def test_an_app_that_never_consumed_is_unknown_whatever_it_promised(spark, tmp_path: Path) -> None:
    """No offset committed anywhere: even at-most-once, which may lose outputs, has
    nothing judged."""
    res = analyze(app_run(tmp_path, [], "at-most-once", committed={}, out_ends={0: 0}))
    assert found(res) == {}
    assert res.valid == "unknown"
    (problem,) = res.problems
    assert problem.startswith("5 input value(s) that must have committed are in no app output")
    assert "t/1: 2 from offset 0, none committed" in problem and "never consumed" in problem


def test_outputs_without_an_id_are_unknown(spark, tmp_path: Path) -> None:
    res = analyze(app_run(tmp_path, [*CLEAN_OUT, (None, 1, 2)]))
    assert found(res) == {}
    assert res.valid == "unknown"
    assert res.problems == (
        "1 app output record(s) carry no recognisable id (first: t-out/1@2); set "
        "app.id_json or app.id_regex",
    )


def test_a_lost_output_where_the_output_was_not_drained_is_undecided(spark, tmp_path: Path) -> None:
    """Partition 1 of the output was not read to its end: the missing output of 2
    may sit in it, past where the drain stopped."""
    run = app_run(tmp_path, [(1, 0, 0), (3, 0, 1), (4, 1, 0)], out_ends={0: 2})
    res = analyze(run)
    lost = res.anomalies["app-output-lost"]
    assert lost.count == 2  # 2, and 5
    assert lost.undecided.startswith("the output drain did not read t-out/1 to its end")
    assert res.valid == "unknown"
