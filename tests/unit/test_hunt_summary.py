"""tools/hunt_summary.py's reading of a copier history: where a copier instance that
took an input partition over began, against what the committed copies had reached
(C11's duplicate began below it)."""

from __future__ import annotations

import json
from pathlib import Path

from tools.hunt_summary import takeovers


def _copy(index: int, process: int, time: int, records: list[tuple[int, int]], type_: str):
    poll = {
        "op": "poll",
        "records": [{"topic": "t", "partition": p, "offset": o, "value": o} for p, o in records],
    }
    return [
        {
            "index": index,
            "time": time,
            "type": "invoke",
            "process": process,
            "f": "txn",
            "value": [{"op": "poll"}],
        },
        {
            "index": index + 1,
            "time": time + 5,
            "type": type_,
            "process": process,
            "f": "txn",
            "value": [poll],
        },
    ]


def _write(tmp_path: Path, ops: list[dict]) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in ops))
    return path


def test_takeovers_at_the_committed_offset_below_it_and_above_it(tmp_path: Path) -> None:
    ops = [
        *_copy(0, 1, 10, [(0, 0), (0, 1)], "ok"),  # instance 1 commits p0 up to 2
        *_copy(2, 2, 20, [(0, 2)], "ok"),  # instance 2 takes p0 over at 2
        *_copy(4, 3, 30, [(0, 0)], "ok"),  # instance 3 begins p0 at 0: rewound
        *_copy(6, 4, 40, [(0, 9)], "info"),  # instance 4 begins at 9, past 3: skipped
        *_copy(12, 7, 70, [(0, 10)], "ok"),  # after 4's info txn ended at 10
        *_copy(8, 5, 50, [(1, 0)], "ok"),  # p1, first reader: no takeover
        *_copy(10, 6, 60, [(1, 0)], "ok"),  # p1 again from 0, after 5 committed to 1
    ]
    assert takeovers(_write(tmp_path, ops)) == {
        "at committed": 1,
        "rewound": 2,
        "skipped": 1,
        "after info": 1,
    }


def test_a_takeover_before_any_commit_is_first(tmp_path: Path) -> None:
    ops = [*_copy(0, 1, 10, [(0, 0)], "info"), *_copy(2, 2, 20, [(0, 0)], "ok")]
    assert takeovers(_write(tmp_path, ops)) == {"first": 1}
