"""Issue 26's defect classes and issue 25's undecided drain: where one check's idea of
"committed", "how far the drain read" or "record order" differed from another's.
Each class is planted, beside a clean twin that must stay silent; the facts behind
them are spark_analysis/facts/derived.py's.

The cases whose answer is an anomaly's rows are judged together, in one history
(tests/batched.py); a clean twin there has no row of any check. The cases whose
answer only the verdict gives (unknown, a problem, an allowed anomaly) are judged
alone, at the end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka_trial.spark_analysis.job import analyze

from tests.batched import Cases, Judged, judged_fixture
from tests.histories import TOPIC, Builder
from tests.results import ran

CASES = Cases()
case = CASES.add


judged = judged_fixture(CASES, "facts")


def counts(res: Any) -> dict[str, int]:
    return ran(res)


# --- 1. lost below the drain's end ---------------------------------------------------


def _acked_then_aborted(b: Builder, drain_reads_2: bool) -> None:
    """2 acknowledged at offset 1; after it only an aborted transaction's record
    (offset 2) and its marker (3): the read_committed drain returns nothing there."""
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.txn(1, [(3, 0, 2)], "fail")
    b.drain(9, [(1, 0, 0), (2, 0, 1)] if drain_reads_2 else [(1, 0, 0)], at_end={0: 4})


case("lost below the end")(lambda b: _acked_then_aborted(b, drain_reads_2=False))
case("read below the end")(lambda b: _acked_then_aborted(b, drain_reads_2=True))


def test_a_value_below_the_drains_end_with_only_aborted_records_after_is_lost(
    judged: dict[str, Judged],
) -> None:
    j = judged["lost below the end"]
    assert j.seen() == {"lost-write": 1}
    ex = j.examples("lost-write")[0]
    assert (ex["value"], ex["reason"], ex["drain_end"]) == (j.case.v(2), "below the drain's end", 4)


def test_the_drain_returning_it_below_its_end_is_clean(judged: dict[str, Judged]) -> None:
    assert judged["read below the end"].seen() == {}


# --- 2. read, then gone at a truncated tail ---------------------------------------------


def _tail_read_then_truncated(b: Builder, end: int) -> None:
    """A consumer read 2 (an unacknowledged send that landed) at offset 1; the drain
    read the partition to its end at `end` and returned only offset 0."""
    b.sends(0, [(1, 0, 0, "ok")])
    b.sends(0, [(2, 0, None, "info")])
    b.poll(5, [(1, 0, 0), (2, 0, 1)])
    b.drain(9, [(1, 0, 0)] + ([(2, 0, 1)] if end > 1 else []), at_end={0: end})


case("tail cut off")(lambda b: _tail_read_then_truncated(b, end=1))
case("tail drained")(lambda b: _tail_read_then_truncated(b, end=2))


def test_a_record_read_and_then_cut_off_by_the_drains_end_vanished(
    judged: dict[str, Judged],
) -> None:
    """Claim C13: the end marker at offset 1 proves offset 1 no longer exists, though
    the drain returned no record at or beyond it."""
    j = judged["tail cut off"]
    assert j.seen() == {"vanished-read": 1}
    ex = j.examples("vanished-read")[0]
    assert (ex["value"], ex["offset"], ex["drain_end"], ex["processes"]) == (
        j.case.v(2),
        1,
        1,
        [j.case.p(5)],
    )


def test_the_drain_returning_the_tail_is_no_vanished_read(judged: dict[str, Judged]) -> None:
    assert judged["tail drained"].seen() == {}


# --- 3. transactions that must have committed ----------------------------------------


def _info_txn(b: Builder, drained: list[tuple[int, int, int]], consumer: bool = False) -> None:
    """A transaction over partitions 0 and 1 ended info (its commit timed out); the
    drain read both partitions to their end (offset 1 is each one's marker)."""
    b.txn(0, [(1, 0, 0), (2, 1, 0)], "info")
    if consumer:
        b.poll(5, [(1, 0, 0)])
    b.drain(9, drained, at_end={0: 2, 1: 2})


case("info txn, half drained")(lambda b: _info_txn(b, [(1, 0, 0)]))
case("info txn, drained whole")(lambda b: _info_txn(b, [(1, 0, 0), (2, 1, 0)]))
case("info txn, read by nobody")(lambda b: _info_txn(b, []))
case("info txn, read by a consumer")(lambda b: _info_txn(b, [], consumer=True))


def test_an_info_txn_the_drain_saw_half_of_is_torn_and_lost(judged: dict[str, Judged]) -> None:
    """KAFKA-17754's shape: the drain (read_committed) read 1, so the transaction
    committed, and 2 must be visible too."""
    j = judged["info txn, half drained"]
    assert j.seen() == {"lost-write": 1, "torn-txn": 1}
    torn = j.examples("torn-txn")[0]
    assert (torn["outcome"], torn["missing"]) == ("info", [j.case.v(2)])
    assert j.examples("lost-write")[0]["value"] == j.case.v(2)


def test_an_info_txn_the_drain_saw_whole_is_clean(judged: dict[str, Judged]) -> None:
    assert judged["info txn, drained whole"].seen() == {}


def test_an_info_txn_nobody_read_is_not_missing(judged: dict[str, Judged]) -> None:
    """Nothing proves it committed: its absence is no loss (and not unseen either)."""
    assert judged["info txn, read by nobody"].seen() == {}


def test_a_consumer_read_does_not_prove_an_info_txn_committed(judged: dict[str, Judged]) -> None:
    """A consumer may read read_uncommitted: its read of 1 proves no commit (Jepsen
    counts any ok read; README's anomaly table says why kafka-trial does not)."""
    seen = judged["info txn, read by a consumer"].seen()
    assert "torn-txn" not in seen and "lost-write" not in seen, seen


def _info_txn_and_a_retry(b: Builder, retry: str) -> None:
    """An exactly-once copier's shape (the claims campaign's eos-copier, stop 35): a
    copier's transaction over partitions 0 and 1 ended info when it crashed before its
    commit; the copier that took over copied the same input again, so its transaction
    sent 1 too (ended `retry`). The drain read 1 and both partitions to their end."""
    b.txn(0, [(1, 0, None), (2, 1, None)], "info")
    b.txn(1, [(1, 0, 0)], retry)
    b.drain(9, [(1, 0, 0)], at_end={0: 2, 1: 0})


case("info txn, drained value a retry sent too")(lambda b: _info_txn_and_a_retry(b, "ok"))
case("info txn, drained value only it sent")(lambda b: _info_txn_and_a_retry(b, "fail"))


def test_a_drained_value_another_op_sent_too_proves_no_commit(
    judged: dict[str, Judged],
) -> None:
    """The drain's 1 may be the retry's copy: the crashed transaction is not proven
    committed, so its 2 is neither lost nor torn (the claims campaign's eos-copier
    failed CI on this: 43 lost-writes and a torn-txn that were the harness's)."""
    assert judged["info txn, drained value a retry sent too"].seen() == {}


def test_a_drained_value_whose_other_sends_failed_proves_the_commit(
    judged: dict[str, Judged],
) -> None:
    """The twin: the retry aborted, so the drain's 1 can only be the info
    transaction's, which therefore committed, and 2 is lost."""
    j = judged["info txn, drained value only it sent"]
    assert j.seen() == {"lost-write": 1, "torn-txn": 1}
    assert j.examples("torn-txn")[0]["missing"] == [j.case.v(2)]


# --- 4. deliveries, not ops, in groups -----------------------------------------------


def _processed_in_one_op(b: Builder, records: list[tuple[int, int, int]]) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.poll(5, [(1, 0, 0), (2, 0, 1)])
    b.processed(5, records)
    b.group_offsets(8, {0: 2})
    b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


case("processed twice in one op")(
    lambda b: _processed_in_one_op(b, [(1, 0, 0), (2, 0, 1), (1, 0, 0)])
)
case("processed once in one op")(lambda b: _processed_in_one_op(b, [(1, 0, 0), (2, 0, 1)]))


def test_a_value_processed_twice_in_one_op_is_redelivered(judged: dict[str, Judged]) -> None:
    j = judged["processed twice in one op"]
    assert j.seen() == {"group-redelivered": 1}
    ex = j.examples("group-redelivered")[0]
    assert (ex["value"], ex["times"], ex["ops"]) == (j.case.v(1), 2, 1)


def test_each_value_processed_once_in_one_op_is_clean(judged: dict[str, Judged]) -> None:
    assert judged["processed once in one op"].seen() == {}


# --- 5. exactly-once output of unacknowledged input ----------------------------------


def _copied_unacknowledged(b: Builder, outputs: list[tuple[int, int, int]]) -> None:
    """Input 1's send ended info, yet it landed and the copier copied it (as -2)."""
    b.sends(0, [(1, 0, None, "info")])
    b.copy(5, [(1, 0, 0)], [(-2, 0, 0)])
    b.read_out(8, outputs)
    b.drain(9, [(1, 0, 0)], at_end={0: 1})


case("unacknowledged input copied twice")(
    lambda b: _copied_unacknowledged(b, [(-2, 0, 0), (-2, 0, 2)])
)
case("unacknowledged input copied once")(lambda b: _copied_unacknowledged(b, [(-2, 0, 0)]))


def test_an_unacknowledged_input_copied_twice_is_an_eos_duplicate(
    judged: dict[str, Judged],
) -> None:
    """With duplicates allowed (the copier's config), this was VALID: the output's
    `duplicate` is allowed there, eos-output-duplicate never is."""
    j = judged["unacknowledged input copied twice"]
    assert j.seen() == {"duplicate": 1, "eos-output-duplicate": 1}
    assert j.examples("eos-output-duplicate")[0]["value"] == j.case.v(1)


def test_an_unacknowledged_input_copied_once_is_clean(judged: dict[str, Judged]) -> None:
    assert judged["unacknowledged input copied once"].seen() == {}


# --- 6. several poll micro-ops in one op ---------------------------------------------


def _micro_ops(b: Builder, batches: list[list[tuple[int | None, int, int]]]) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.polls(5, batches)
    b.drain(9, [(1, 0, 0), (2, 0, 1), (3, 0, 2)], at_end={0: 3})


case("micro-ops read on")(lambda b: _micro_ops(b, [[(1, 0, 0), (2, 0, 1)], [(3, 0, 2)]]))
case("micro-ops go back")(lambda b: _micro_ops(b, [[(1, 0, 0), (2, 0, 1)], [(2, 0, 1)]]))
case("micro-ops skip")(lambda b: _micro_ops(b, [[(1, 0, 0)], [(3, 0, 2)]]))


def test_a_poll_read_on_across_its_micro_ops_is_clean(judged: dict[str, Judged]) -> None:
    """The second micro-op's first record is its record 0: ordered by that alone, it
    came before the first micro-op's record 1 (a false int-nonmonotonic-poll and
    int-poll-skip)."""
    assert judged["micro-ops read on"].seen() == {}


def test_a_poll_going_back_in_its_second_micro_op_is_int_nonmonotonic(
    judged: dict[str, Judged],
) -> None:
    j = judged["micro-ops go back"]
    assert j.count("int-nonmonotonic-poll") == 1, j.seen()
    ex = j.examples("int-nonmonotonic-poll")[0]
    assert (ex["prev_offset"], ex["offset"]) == (1, 1)


def test_a_skip_between_two_micro_ops_is_an_int_poll_skip(judged: dict[str, Judged]) -> None:
    j = judged["micro-ops skip"]
    assert j.seen() == {"int-poll-skip": 1}
    assert j.examples("int-poll-skip")[0]["skipped_values"] == [j.case.v(2)]


# --- 8. the twins of a cut-off run ----------------------------------------------------


def _all_read(b: Builder, drain: bool) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.poll(5, [(1, 0, 0), (2, 0, 1)])
    if drain:
        b.drain(9, [(1, 0, 0), (2, 0, 1)], at_end={0: 2})


def _half_read_txn(b: Builder, drain: bool) -> None:
    b.txn(0, [(1, 0, 0), (2, 1, 0)], "ok")
    b.poll(5, [(1, 0, 0)])  # nobody reads partition 1 during the run
    if drain:
        b.drain(9, [(1, 0, 0)], at_end={0: 2, 1: 2})


case("all read, drained")(lambda b: _all_read(b, drain=True))
case("half-read txn, drained")(lambda b: _half_read_txn(b, drain=True))


def test_the_same_run_with_its_drain_is_clean(judged: dict[str, Judged]) -> None:
    assert judged["all read, drained"].seen() == {}


def test_the_drain_reading_partition_1_to_its_end_proves_the_tear(
    judged: dict[str, Judged],
) -> None:
    assert judged["half-read txn, drained"].seen() == {"lost-write": 1, "torn-txn": 1}


# --- 9. evidence in transactions that did not commit ---------------------------------


def _failed_txn_poll(b: Builder, offset: int) -> None:
    """An aborted transaction's own poll returned 1 at `offset`: its read does not
    count, but it says what the log held there."""
    b.sends(0, [(1, 0, 0, "ok")])
    b.txn(1, [(2, 1, 0)], "fail", polled=[(1, 0, offset)])
    b.drain(9, [(1, 0, 0)], at_end={0: 1, 1: 2})


case("failed txn's poll, elsewhere")(lambda b: _failed_txn_poll(b, offset=5))
case("failed txn's poll, in place")(lambda b: _failed_txn_poll(b, offset=0))


def test_a_failed_txns_poll_is_evidence_of_a_duplicate(judged: dict[str, Judged]) -> None:
    j = judged["failed txn's poll, elsewhere"]
    assert j.seen() == {"duplicate": 1}
    ex = j.examples("duplicate")[0]
    assert (ex["value"], [a["offset"] for a in ex["at"]]) == (j.case.v(1), [0, 5])


def test_a_failed_txns_poll_agreeing_with_the_log_is_clean(judged: dict[str, Judged]) -> None:
    assert judged["failed txn's poll, in place"].seen() == {}


def _unacked_pair(b: Builder, found: list[tuple[int, int, int]]) -> None:
    """One op sent 4 then 2, neither acknowledged; only reads place them."""
    b.sends(0, [(4, 0, None, "info"), (2, 0, None, "info")])
    b.sends(1, [(3, 0, 1, "ok")])
    b.drain(9, found, at_end={0: 3})


case("sends found out of order")(lambda b: _unacked_pair(b, [(2, 0, 0), (3, 0, 1), (4, 0, 2)]))
case("sends found in order")(lambda b: _unacked_pair(b, [(4, 0, 0), (3, 0, 1), (2, 0, 2)]))


def test_sends_that_reads_found_out_of_order_are_int_nonmonotonic(
    judged: dict[str, Judged],
) -> None:
    """Jepsen's int-nonmonotonic-send-test, second op: b read at 0, d at 2."""
    j = judged["sends found out of order"]
    assert j.count("int-nonmonotonic-send") == 1, j.seen()
    ex = j.examples("int-nonmonotonic-send")[0]
    v = j.case.v
    assert (ex["prev_value"], ex["prev_offset"], ex["value"], ex["offset"]) == (v(4), 2, v(2), 0)


def test_sends_that_reads_found_in_order_are_clean(judged: dict[str, Judged]) -> None:
    """In order, with 3 between them: an int-send-skip, allowed, and nothing else."""
    assert judged["sends found in order"].seen() == {"int-send-skip": 1}


# --- 10. int-send-skip ----------------------------------------------------------------


def _two_sends_apart(b: Builder, third: bool) -> None:
    """One op's 1 and 3 at offsets 0 and 2; with `third`, another client's 2 at 1."""
    b.sends(0, [(1, 0, 0, "ok"), (3, 0, 2, "ok")])
    if third:
        b.sends(1, [(2, 0, 1, "ok")])
    drained = [(1, 0, 0), (2, 0, 1), (3, 0, 2)] if third else [(1, 0, 0), (3, 0, 2)]
    b.drain(9, drained, at_end={0: 3})


case("a record between one op's sends")(lambda b: _two_sends_apart(b, third=True))
case("nothing known between one op's sends")(lambda b: _two_sends_apart(b, third=False))


def test_a_record_between_one_ops_sends_is_an_int_send_skip(judged: dict[str, Judged]) -> None:
    """Another client's 2 landed between the op's 1 and 3 (allowed by default, as
    Jepsen allows it: test_group_events_beside_sends_and_a_drain_are_judged shows
    the verdict)."""
    j = judged["a record between one op's sends"]
    # The op's 1 -> 2 -> the op's 3 is also a ww cycle between the two ops: G0, allowed
    # by default (concurrent producers' writes interleave; see test_cycles.py).
    assert j.seen() == {"G0": 1, "int-send-skip": 1}
    ex = j.examples("int-send-skip")[0]
    v = j.case.v
    assert (ex["prev_value"], ex["value"], ex["skipped_values"]) == (v(1), v(3), [v(2)])


def test_no_record_known_between_one_ops_sends_is_no_skip(judged: dict[str, Judged]) -> None:
    assert judged["nothing known between one op's sends"].seen() == {}


# --- issue 25: the twin of the undecided drains ---------------------------------------


@case("every partition drained")
def _(b: Builder) -> None:
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, 0, "ok")])
    b.drain(9, [(1, 0, 0), (2, 1, 0)], at_end={0: 1, 1: 1})


def test_a_drain_that_finished_every_partition_decides(judged: dict[str, Judged]) -> None:
    assert judged["every partition drained"].seen() == {}


# --- judged alone: what only the verdict says ------------------------------------------


def _with_damaged_line(run_dir: Path) -> Path:
    path = run_dir / "history.jsonl"
    first, rest = path.read_text().split("\n", 1)
    path.write_text(first + "\ngarbage\n" + rest)
    return run_dir


def test_beside_a_damaged_line_absence_is_unknown_and_presence_invalid(
    spark, tmp_path: Path
) -> None:
    """Class 7. The read that would have returned 2 may be the damaged line, so its
    loss is undecided; no missing line takes back 4, read at two offsets."""
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok"), (4, 1, 0, "ok")])
    b.drain(9, [(1, 0, 0), (3, 0, 2), (4, 1, 0), (4, 1, 1)], at_end={0: 3, 1: 2})
    res = analyze(_with_damaged_line(b.done()))
    c = counts(res)
    assert (c["lost-write"], c["duplicate"]) == (1, 1), c
    assert "damaged line" in res.anomalies["lost-write"].undecided
    assert res.anomalies["duplicate"].undecided is None
    assert res.valid is False and res.forbidden_seen == ("duplicate",)


def test_a_cut_off_run_is_unknown_and_decides_no_torn_txn(spark, tmp_path: Path) -> None:
    """Class 8: no drain. Topic t was read whole, yet whether a read record later
    vanished cannot be known; nothing read partition 1 of the transaction, so 2 may
    merely be late: no tear is proven. Their drained twins are batched above."""
    b = Builder(tmp_path)
    _all_read(b, drain=False)
    b.txn(1, [(11, 2, 0), (12, 3, 0)], "ok")
    b.poll(6, [(11, 2, 0)])
    res = analyze(b.done())
    c = counts(res)
    assert (c["torn-txn"], c["unseen"]) == (0, 1), c
    assert res.valid == "unknown" and res.forbidden_seen == ()
    assert any("final drain never ran" in p for p in res.problems), res.problems


def test_a_history_of_group_events_only_tested_nothing(spark, tmp_path: Path) -> None:
    """Jepsen's empty-history-test: an assignment, no send, no read."""
    b = Builder(tmp_path)
    b.op(5, "assign", {"op": "assign", "partitions": [0]})
    res = analyze(b.done())
    assert res.valid == "unknown"
    assert any("nothing was tested" in p for p in res.problems), res.problems


def test_group_events_beside_sends_and_a_drain_are_judged(spark, tmp_path: Path) -> None:
    """The twin: the same assignment beside sends and their drain is judged. The
    sends are class 10's skip, so this also shows its verdict: reported, allowed by
    default (as Jepsen allows it), and the run stays valid."""
    b = Builder(tmp_path)
    b.op(5, "assign", {"op": "assign", "partitions": [0]})
    _two_sends_apart(b, third=True)
    res = analyze(b.done())
    assert counts(res)["int-send-skip"] == 1
    assert res.valid is True, res.problems
    assert res.allowed_seen == ("int-send-skip",)
    # No transaction: the cycle search did not run (check.cycles: auto), and says so.
    assert res.anomalies["G0"].count is None
    assert res.anomalies["G0"].skipped.startswith("the history holds no transaction")


def test_a_drain_whose_polls_returned_nothing_is_unknown_for_every_partition(
    spark, tmp_path: Path
) -> None:
    """The Docker engine died mid-run: the drain ran, every poll came back empty, and
    the cluster never became healthy. That was INVALID with `unseen` forbidden."""
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 1, 0, "ok")])
    b.h.invoke("nemesis", "await-healthy", {"topic": TOPIC, "timeout_s": 60})
    b.h.complete("info", "nemesis", "await-healthy", {"topic": TOPIC}, "not in sync")
    b.drain(9, [])
    b.drain(9, [])
    res = analyze(b.done())
    assert counts(res)["unseen"] == 2
    assert res.valid == "unknown" and res.forbidden_seen == ()
    why = res.anomalies["unseen"].undecided
    assert "t/0 (no record returned), t/1 (no record returned)" in why, why
    assert "not healthy before the drain (await-healthy ended info)" in why, why


def test_a_drain_that_stopped_partway_names_the_time_limit(spark, tmp_path: Path) -> None:
    b = Builder(tmp_path)
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.drain(9, [(1, 0, 0)])  # no end marker: the drain's time ran out
    res = analyze(b.done())
    assert res.valid == "unknown"
    assert res.anomalies["unseen"].undecided.startswith(
        "the final drain did not finish t/0 (time limit"
    )


def test_an_allowed_unseen_value_adds_no_problem(spark, tmp_path: Path) -> None:
    """A preset that expects unseen values (claim C5's) stays decided by the rest."""
    b = Builder(tmp_path, allowed=("unseen",))
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok")])
    b.drain(9, [(1, 0, 0)])
    res = analyze(b.done())
    assert counts(res)["unseen"] == 1
    assert res.valid is True, res.problems
