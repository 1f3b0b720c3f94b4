"""tools/retry_order.py's reading of librdkafka's debug log: a request built while an
earlier one was in flight, sent before that one's retry (the order of a real
clients.log of the hunt-inflight1 campaign, 2026-11-27), and its clean twin, where
the failure came with nothing built behind it."""

from __future__ import annotations

from pathlib import Path

from tools.retry_order import main, overtaken

P = "2026-11-27 {t} {fac} [rdkafka#producer-4] [thrd:127.0.0.1:32830/2]: 127.0.0.1:32830/2: "

BUILT_30 = P + "trial [1]: Produce MessageSet with 30 message(s) (421 bytes, ApiVersion 10)"
SENT_31 = P + "Sent ProduceRequest (v10, 467 bytes @ 0, CorrId 31)"
BUILT_37 = P + "trial [1]: Produce MessageSet with 37 message(s) (505 bytes, ApiVersion 10)"
TIMED_OUT_31 = [
    P + "Received ProduceResponse (v10, 48 bytes, CorrId 31, rtt 5031.46ms)",
    P + "ProduceRequest failed: Broker: Request timed out: actions Retry,MsgPossiblyPersisted",
    P + "trial [1]: MessageSet with 30 message(s) (MsgId 0, BaseSeq -1) encountered error: "
    "Broker: Request timed out (actions Retry,MsgPossiblyPersisted)",
]
SENT_43 = P + "Sent ProduceRequest (v10, 551 bytes @ 0, CorrId 43)"


def _log(tmp_path: Path, lines: list[tuple[str, str, str]]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    text = "".join(line.format(t=t, fac=fac) + "\n" for t, fac, line in lines)
    (run / "clients.log").write_text(text)
    return run


def test_a_request_built_before_a_failure_goes_ahead_of_the_retry(tmp_path: Path) -> None:
    run = _log(
        tmp_path,
        [
            ("01:36:47,354", "PRODUCE", BUILT_30),
            ("01:36:47,525", "SEND", SENT_31),
            ("01:36:47,525", "PRODUCE", BUILT_37),  # built while 31 is in flight
            ("01:36:52,556", "RECV", TIMED_OUT_31[0]),
            ("01:36:52,556", "REQERR", TIMED_OUT_31[1]),
            ("01:36:52,556", "MSGSET", TIMED_OUT_31[2]),
            ("01:36:52,575", "SEND", SENT_43),
        ],
    )
    (case,) = overtaken(run / "clients.log")
    assert (case.failed.tp, case.failed.n, case.failed.built) == ("trial [1]", 30, "01:36:47,354")
    assert (case.ahead.n, case.ahead.built) == (37, "01:36:47,525")
    assert case.failed_at == "01:36:52,556" and case.error == "Broker: Request timed out"


def test_a_failure_with_nothing_built_behind_it_is_retried_first(tmp_path: Path) -> None:
    run = _log(
        tmp_path,
        [
            ("01:36:47,354", "PRODUCE", BUILT_30),
            ("01:36:47,525", "SEND", SENT_31),
            ("01:36:52,556", "RECV", TIMED_OUT_31[0]),
            ("01:36:52,556", "REQERR", TIMED_OUT_31[1]),
            ("01:36:52,556", "MSGSET", TIMED_OUT_31[2]),
            ("01:36:52,575", "PRODUCE", BUILT_37),  # built after: the retry is ahead of it
            ("01:36:52,575", "SEND", SENT_43),
        ],
    )
    assert overtaken(run / "clients.log") == []


def test_a_run_without_a_debug_log_is_named_with_the_fix(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path} has no clients.log -- fix: give a run directory" in err


def test_requests_built_before_a_disconnect_are_built_again(tmp_path: Path) -> None:
    """A connection that goes down fails what was in flight and what was built behind
    it; both are built again, in order. A later failure has nothing built behind it."""
    fail = P + "Disconnected: connection closed by peer (after 5808ms in state UP)"
    sent_40 = SENT_31.replace("CorrId 31", "CorrId 40")
    timed_out_40 = [line.replace("CorrId 31", "CorrId 40") for line in TIMED_OUT_31]
    run = _log(
        tmp_path,
        [
            ("01:36:47,354", "PRODUCE", BUILT_30),
            ("01:36:47,525", "SEND", SENT_31),
            ("01:36:47,525", "PRODUCE", BUILT_37),
            ("01:36:48,000", "FAIL", fail),
            ("01:36:48,100", "PRODUCE", BUILT_30),
            ("01:36:48,100", "SEND", sent_40),
            ("01:36:53,100", "RECV", timed_out_40[0]),
            ("01:36:53,100", "REQERR", timed_out_40[1]),
            ("01:36:53,100", "MSGSET", timed_out_40[2]),
        ],
    )
    assert overtaken(run / "clients.log") == []
