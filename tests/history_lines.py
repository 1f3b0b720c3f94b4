"""A catalogue of history lines, whole and damaged, written as raw JSON: what the
parsing tests (tests/unit/test_history_parsing.py) and the native parse's tests
(tests/unit/test_native_parse.py) feed the readers, each knowing which lines Spark
counts as damaged."""

from __future__ import annotations

import json
from typing import Any


def op_line(index: int, **over: Any) -> str:
    d: dict[str, Any] = {
        "index": index,
        "time": index,
        "type": "ok",
        "process": 7,
        "f": "poll",
        "value": [{"op": "poll", "records": [record(1, 0)]}],
    }
    d.update(over)
    return json.dumps(d, separators=(",", ":"))


def record(value: Any, offset: Any) -> dict[str, Any]:
    return {"topic": "t", "partition": 0, "offset": offset, "value": value}


def poll_line(index: int, value: Any, offset: Any = 0) -> str:
    """A poll whose one record has this value and offset, written as raw JSON."""
    return (
        f'{{"index":{index},"time":1,"type":"ok","process":7,"f":"poll","value":'
        f'[{{"op":"poll","records":[{{"topic":"t","partition":0,"offset":{offset},'
        f'"value":{value}}}]}}]}}'
    )


NEMESIS = '{{"index":{i},"time":1,"type":"info","process":"nemesis","f":"kill","value":{v}}}'

# (line, damaged?). Indices of the whole lines are unique, so each row is traceable.
LINES: list[tuple[str, bool]] = [
    (op_line(1), False),
    (NEMESIS.format(i=2, v='{"nodes":["b1"],"n":3}'), False),
    (NEMESIS.format(i=3, v='["b1","b2"]'), False),
    (NEMESIS.format(i=4, v="null"), False),
    (op_line(5, process=8, f="stall", value=[{"op": "stall", "ms": 10}]), False),
    (poll_line(6, 2**63 - 1), False),
    (poll_line(7, -(2**63)), False),
    (op_line(8, value=[{"op": "poll", "records": [record(None, 3)]}]), False),
    ("{'index':9,'time':1,'type':'ok','process':7,'f':'poll','value':[]}", False),
    (op_line(10, type="invoke", value=[{"op": "poll"}]), False),
    # Spark keeps what it parsed of these (index and type too) and marks them corrupt:
    (poll_line(20, 2**64), True),
    (poll_line(21, -(2**63) - 1), True),
    (poll_line(22, 2.5), True),
    (poll_line(23, 1, '"abc"'), True),
    (
        op_line(24, value=[{"op": "send", "topic": "t", "partition": 0, "value": 2**64}], f="send"),
        True,
    ),
    (
        op_line(25, value=[{"op": "send", "topic": "t", "partition": "x", "value": 1}], f="send"),
        True,
    ),
    (op_line(26, value={"op": "poll"}), True),  # a client's value is a list
    (op_line(27, value=None), True),
    (op_line(28, value=[None]), True),
    (op_line(29, value=[{"op": "pol"}]), True),  # no such micro-op: its records would vanish
    (op_line(30, value=[{"records": []}]), True),
    (op_line(31, value=[{"op": "poll", "records": [None]}]), True),
    (op_line(32, type="OK"), True),
    (op_line(33, process=None), True),
    (op_line(34).replace('"index":34', '"index":"x34"'), True),
    (NEMESIS.format(i=35, v='[{"op":"x","a"'), True),  # cut inside a list: parsed in part
    ('{"index":36,"time":"soon","type":"ok","process":"nemesis","f":"kill","value":{}}', True),
    # The JSON reader stops after one object: the rest of the line would vanish.
    (op_line(37) + " junk", True),
    (op_line(38) + '{"index":39,"time":1,"ty', True),
    # Not one op each: an array (the JSON reader makes a row per element, or none).
    ("[" + op_line(40) + "," + op_line(41) + "]", True),
    ("[]", True),
    ("null", True),
    ("5", True),
    ("{}", True),
    ("garbage", True),
]
