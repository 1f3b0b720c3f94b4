"""tools/duplicate_timeline.py: each value read at two positions, put in its class by
what its own send and its client were told, and followed through librdkafka's debug
log (the line shapes of librdkafka 2.16.0's `msg` and `eos` contexts)."""

from __future__ import annotations

import json
from pathlib import Path

from tools.duplicate_timeline import _log_lines, classify


def _op(i: int, typ: str, process: int, value: list, error: str | None = None) -> str:
    op = {"index": i, "time": i * 1000, "type": typ, "process": process, "f": "send"}
    return json.dumps(op | {"value": value} | ({"error": error} if error else {}))


def _send(v: int, client: int, seq: int, outcome: str | None = None, offset: int = 0) -> dict:
    m = {"op": "send", "topic": "t", "partition": 0, "value": v, "client": client, "seq": seq}
    return m | ({"outcome": outcome, "offset": offset} if outcome else {})


def _poll(*recs: tuple[int, int]) -> str:
    records = [{"topic": "t", "partition": 0, "offset": o, "value": v} for v, o in recs]
    return json.dumps(
        {"index": 99, "time": 99_000, "type": "ok", "process": 9, "f": "poll",
         "value": [{"op": "poll", "records": records}]}
    )  # fmt: skip


def _run(tmp_path: Path) -> Path:
    lines = [
        _op(0, "invoke", 1, [_send(1, 0, 0)]),  # client 0: a timeout first
        _op(1, "info", 1, [_send(1, 0, 0, "info")], "_MSG_TIMED_OUT"),
        _op(2, "invoke", 2, [_send(10, 0, 1)]),
        _op(3, "ok", 2, [_send(10, 0, 1, "ok", 5)]),
        _op(4, "invoke", 3, [_send(20, 1, 0)]),  # client 1: its own send timed out
        _op(5, "info", 3, [_send(20, 1, 0, "info")], "_MSG_TIMED_OUT"),
        _op(6, "invoke", 4, [_send(30, 2, 0)]),  # client 2: no timeout at all
        _op(7, "ok", 4, [_send(30, 2, 0, "ok", 7)]),
        _op(8, "invoke", 4, [_send(40, 2, 1)]),  # the clean twin: read once
        _op(9, "ok", 4, [_send(40, 2, 1, "ok", 8)]),
        _poll((10, 5), (10, 9), (20, 6), (20, 10), (30, 7), (30, 11), (40, 8), (40, 8)),
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_text("\n".join(lines) + "\n")
    return run


def test_each_duplicate_is_classed_by_what_its_client_was_told(tmp_path: Path) -> None:
    found = {s.value: (why, pos, s.msgid) for why, s, pos in classify(_run(tmp_path), None)}
    assert found == {
        10: ("client-timeout", [(0, 5), (0, 9)], 2),  # client 0's 2nd produce() to t[0]
        20: ("own-timeout", [(0, 6), (0, 10)], 1),
        30: ("no-timeout", [(0, 7), (0, 11)], 1),
    }


def test_the_debug_log_shows_the_resend_under_a_new_epoch(tmp_path: Path) -> None:
    run = _run(tmp_path)
    p = "2026-11-29 11:00:0{s},000 {fac} [kt-producer-0#producer-3] [thrd:b/1]: b/1: "
    other = "2026-11-29 11:00:00,500 PRODUCE [kt-producer-1#producer-4] [thrd:b/1]: b/1: "
    sets = "t [0]: Produce MessageSet with {n} message(s) (99 bytes, ApiVersion 10, " \
        "MsgVersion 2, MsgId {m}, BaseSeq {b}, PID{{Id:7,Epoch:{e}}}, uncompressed)"  # fmt: skip
    (run / "clients.log").write_text(
        "\n".join(
            [
                p.format(s=1, fac="PRODUCE") + sets.format(n=2, m=1, b=0, e=0),
                other + sets.format(n=2, m=1, b=0, e=0),  # another client's MsgId 1..2
                p.format(s=2, fac="DRAIN") + "All partitions drained, bumped epoch to "
                "PID{Id:7,Epoch:1}",
                p.format(s=3, fac="PRODUCE") + sets.format(n=1, m=2, b=0, e=1),
                p.format(s=4, fac="PRODUCE") + sets.format(n=5, m=3, b=1, e=1),  # not MsgId 2
            ]
        )
        + "\n"
    )
    shown = _log_lines(run, client=0, topic="t", part=0, msgid=2)
    assert len(shown) == 3, shown
    assert "epoch 0, BaseSeq 0 (this message's seq 1)" in shown[0]
    assert "bumped epoch to PID{Id:7,Epoch:1}" in shown[1]
    assert "epoch 1, BaseSeq 0 (this message's seq 0)" in shown[2]
