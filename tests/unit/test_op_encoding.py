"""The producers' fast path writes exactly the text the generic encoder would."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_trial.contracts.ops import Op, Send, encode

ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
sends = st.builds(
    Send,
    topic=st.text(min_size=1, max_size=8),
    partition=st.none() | st.integers(0, 1000),
    value=ints,
    offset=st.none() | ints,
    outcome=st.none() | st.sampled_from(["ok", "fail", "info"]),
    resend=st.booleans(),
    client=st.none() | st.integers(0, 10**6),
    seq=st.none() | st.integers(0, 10**9),
).filter(lambda s: (s.client is None) == (s.seq is None))


def generic(op: Op) -> str:
    d = {"index": op.index, "time": op.time, "type": op.type, "process": op.process, "f": op.f}
    d["value"] = op.value
    if op.error is not None:
        d["error"] = op.error
    return json.dumps(d, separators=(",", ":"), default=encode)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(sends, min_size=1, max_size=5),
    st.sampled_from(["invoke", "ok", "fail", "info"]),
    st.integers(0, 10**6) | st.just("nemesis"),
    st.none() | st.text(max_size=10),
)
def test_fast_send_encoding_is_the_generic_one(ms, type_, process, error) -> None:
    op = Op(7, 123_456_789, type_, process, "send", ms, error)
    assert op.to_json() == generic(op)
    assert json.loads(op.to_json())["value"] == [m.to_dict() for m in ms]


def test_a_send_that_records_no_offset_yet_has_none_in_its_text() -> None:
    text = Send("t", None, 5, client=2, seq=0).json_text()
    assert json.loads(text) == {
        "op": "send",
        "topic": "t",
        "partition": None,
        "value": 5,
        "client": 2,
        "seq": 0,
    }
