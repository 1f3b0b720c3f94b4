"""The Spark checker on hand-made histories: each anomaly planted, and clean twins."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_trial.checkers.anomalies import DEFAULT_ALLOWED
from kafka_trial.spark_analysis import history_frames
from kafka_trial.spark_analysis.job import analyze

from tests.histories import Builder
from tests.results import ran


def counts(res: dict) -> dict[str, int]:
    return ran(res)


def clean(tmp: Path) -> Builder:
    b = Builder(tmp)
    b.sends(0, [(0, 0, 0, "ok"), (1, 1, 0, "ok"), (2, 0, 1, "ok")])
    b.sends(1, [(3, 1, 1, "ok")])
    b.nemesis("kill", {"brokers": [1]})
    b.poll(2, [(0, 0, 0), (2, 0, 1), (1, 1, 0), (3, 1, 1)])
    b.drain(9, [(0, 0, 0), (2, 0, 1), (1, 1, 0), (3, 1, 1)], at_end={0: 2, 1: 2})
    return b


def test_clean_history_is_valid(spark, tmp_path: Path) -> None:
    res = analyze(clean(tmp_path).done())
    assert res["valid"] is True
    assert all(c == 0 for c in counts(res).values()), counts(res)
    assert res["stats"]["sends_attempted"] == 4
    assert res["stats"]["records_read"] == 8  # the consumer's four and the drain's
    assert res["stats"]["nemesis_ops"] == 1
    assert (tmp_path / "results.json").exists()


def test_lost_write(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(10, 0, 0, "ok"), (11, 0, 1, "ok"), (12, 0, 2, "ok")])
    # 11 was acknowledged at offset 1; reads reach offset 2 but never see 11.
    b.poll(1, [(10, 0, 0), (12, 0, 2)])
    res = analyze(b.done())
    c = counts(res)
    assert c["lost-write"] == 1
    assert res["anomalies"]["lost-write"]["examples"][0]["value"] == 11
    assert c["unseen"] == 0
    assert res["valid"] is False
    # The read jumped over the acknowledged offset 1 within one op: an int-poll-skip too.
    assert res["forbidden_seen"] == ["int-poll-skip", "lost-write"]


def test_acks0_value_missing_from_a_partition_read_to_its_end_is_lost(
    spark, tmp_path: Path
) -> None:
    b = Builder(tmp_path)
    # acks=0: no offsets come back, so only reading the whole partition can tell.
    b.sends(0, [(10, 0, None, "ok"), (11, 0, None, "ok"), (12, 1, None, "ok")])
    b.drain(1, [(10, 0, 0)], at_end={0: 1})
    res = analyze(b.done())
    c = counts(res)
    assert c["lost-write"] == 1
    assert res["anomalies"]["lost-write"]["examples"][0]["value"] == 11
    # Partition 1 was never read to its end: 12 is only unseen.
    assert c["unseen"] == 1


def test_acks0_values_all_read_are_not_lost(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(10, 0, None, "ok"), (11, 0, None, "ok")])
    b.drain(1, [(10, 0, 0), (11, 0, 1)], at_end={0: 2})
    c = counts(analyze(b.done()))
    assert all(v == 0 for v in c.values()), c


def test_unseen_when_reads_stop_short(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(10, 0, 0, "ok"), (11, 0, 1, "ok")])
    b.poll(1, [(10, 0, 0)])
    c = counts(analyze(b.done()))
    assert c["unseen"] == 1
    assert c["lost-write"] == 0


def test_acks0_value_without_offset_is_unseen_not_lost(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, None, "ok"), (2, 0, None, "ok")])
    b.poll(1, [(1, 0, 0)])
    c = counts(analyze(b.done()))
    assert c["unseen"] == 1 and c["lost-write"] == 0


def test_duplicate(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(5, 0, 0, "ok")])
    b.poll(1, [(5, 0, 0), (5, 0, 1)])
    c = counts(analyze(b.done()))
    assert c["duplicate"] == 1
    assert c["inconsistent-offsets"] == 0


def test_duplicate_allowed_keeps_run_valid(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path, allowed=("duplicate",))
    b.sends(0, [(5, 0, 0, "ok")])
    b.poll(1, [(5, 0, 0), (5, 0, 1)])
    b.drain(2, [(5, 0, 0), (5, 0, 1)], at_end={0: 2})
    res = analyze(b.done())
    assert res["valid"] is True
    assert res["allowed_seen"] == ["duplicate"]


def test_inconsistent_offsets(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(7, 0, 3, "ok")])  # acknowledged at offset 3 ...
    b.sends(0, [(8, 0, 4, "ok")])
    b.poll(1, [(9, 0, 3), (8, 0, 4)])  # ... but offset 3 holds 9 when read
    b.sends(2, [(9, 0, 5, "info")])
    c = counts(analyze(b.done()))
    assert c["inconsistent-offsets"] == 1
    assert c["lost-write"] == 1  # 7 vanished below the read frontier


def test_unexpected(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok")])
    b.poll(1, [(1, 0, 0), (999, 0, 1)])
    res = analyze(b.done())
    assert counts(res)["unexpected"] == 1
    assert res["anomalies"]["unexpected"]["examples"][0]["value"] == 999


def test_aborted_read(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok")])
    b.sends(0, [(2, 0, None, "fail")])
    b.poll(1, [(1, 0, 0), (2, 0, 1)])
    c = counts(analyze(b.done()))
    assert c["aborted-read"] == 1


def test_info_send_read_is_not_aborted(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(2, 0, None, "info")])
    b.poll(1, [(2, 0, 0)])
    b.drain(3, [(2, 0, 0)], at_end={0: 1})
    res = analyze(b.done())
    assert res["valid"] is True, counts(res)


def test_reorder(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    # Invoked 1 then 2 then 3 in one process; 2 landed before 1.
    b.sends(0, [(1, 0, 1, "ok"), (2, 0, 0, "ok"), (3, 0, 2, "ok")])
    b.poll(1, [(2, 0, 0), (1, 0, 1), (3, 0, 2)])
    res = analyze(b.done())
    assert counts(res)["reorder"] == 1
    ex = res["anomalies"]["reorder"]["examples"][0]
    assert (ex["prev_value"], ex["value"]) == (1, 2)


def test_order_across_processes_is_not_reorder(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 1, "ok")])
    b.sends(1, [(2, 0, 0, "ok")])
    b.poll(2, [(2, 0, 0), (1, 0, 1)])
    c = counts(analyze(b.done()))
    # Without client ids nothing says the two sends went through one client.
    assert c["reorder"] == 0 and c["client-reorder"] == 0


def test_client_reorder_across_the_processes_of_one_client(spark, tmp_path: Path) -> None:
    """Claim C7 with pipelined clients: two processes share client 7, whose second
    produce() (value 2) landed below its first (value 1)."""
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 1, "ok")], client=7)
    b.sends(1, [(2, 0, 0, "ok")], client=7)
    b.sends(2, [(3, 1, 0, "ok")], client=8)
    b.drain(9, [(2, 0, 0), (1, 0, 1), (3, 1, 0)], at_end={0: 2, 1: 1})
    res = analyze(b.done())
    c = counts(res)
    assert c["client-reorder"] == 1 and c["reorder"] == 0
    ex = res["anomalies"]["client-reorder"]["examples"][0]
    assert (ex["client"], ex["prev_value"], ex["value"]) == (7, 1, 2)
    assert res["valid"] is False


def test_client_order_kept_is_no_client_reorder(spark, tmp_path: Path) -> None:
    """The clean twin: the same clients and sends, each landing after the one before."""
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok")], client=7)
    b.sends(1, [(2, 0, 1, "ok")], client=7)
    b.sends(2, [(3, 1, 0, "ok")], client=8)
    b.drain(9, [(1, 0, 0), (2, 0, 1), (3, 1, 0)], at_end={0: 2, 1: 1})
    res = analyze(b.done())
    assert counts(res)["client-reorder"] == 0
    assert res["valid"] is True, counts(res)


# Open invokes are listed by index up to a bound and joined beyond it: both ways.
@pytest.mark.parametrize("listed", [10_000, 0])
def test_truncated_history_is_analysed(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listed: int
) -> None:
    monkeypatch.setattr(history_frames, "_OPEN_LISTED", listed)
    b = clean(tmp_path)
    b.h.invoke(5, "send", [{"op": "send", "topic": "t", "partition": 0, "value": 77}])
    run = b.done()
    with (run / "history.jsonl").open("a") as fh:
        fh.write('{"index": 99, "time": 1, "type": "ok", "pro')  # crash mid-line
    res = analyze(run)
    assert res["history"]["last_line"] == "cut"
    assert res["history"]["damaged_lines"] == 1
    assert res["history"]["open_invokes"] == 1
    assert res["valid"] is True  # the open send of 77 is indeterminate, not lost
    assert res["stats"]["send_outcomes"].get("info") == 1


def test_damage_inside_history_is_unknown(spark, tmp_path: Path) -> None:
    run = clean(tmp_path).done()
    lines = (run / "history.jsonl").read_text().splitlines(keepends=True)
    lines.insert(2, "garbage\n")
    (run / "history.jsonl").write_text("".join(lines))
    res = analyze(run)
    assert res["valid"] == "unknown"
    assert res["problems"]


def test_missing_run_dir_is_a_clear_error(tmp_path: Path) -> None:
    from kafka_trial.contracts.errors import TrialError

    with pytest.raises(TrialError, match=r"not-a-dir not found -- fix: pass a run directory"):
        analyze(tmp_path / "not-a-dir")


def test_a_run_dir_without_a_history_is_a_clear_error(tmp_path: Path) -> None:
    from kafka_trial.contracts.errors import TrialError

    (tmp_path / "empty-run").mkdir()
    with pytest.raises(TrialError, match=r"history\.jsonl.* -- fix: "):
        analyze(tmp_path / "empty-run")


def test_a_bare_history_without_spec_is_judged_with_nothing_allowed(spark, tmp_path: Path) -> None:
    """A history from another tool, or copied alone, needs no spec.json."""
    b = Builder(tmp_path, allowed=("lost-write",))
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.drain(1, [(1, 0, 0)], at_end={0: 1})
    run = b.done()
    (run / "spec.json").unlink()
    res = analyze(run)
    # Only what every run allows (int-send-skip among them).
    assert res["allowed"] == list(DEFAULT_ALLOWED) and "int-send-skip" in res["allowed"]
    assert res["valid"] is False and res["forbidden_seen"] == ["lost-write"]
