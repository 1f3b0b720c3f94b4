"""RUN_DIR/report-data.json: what the HTML report draws, aggregated by the Spark job
(spark_analysis/report_data.py) so that a page costs the same for any history: ops per
bucket, latency percentiles per bucket, offset ranges per partition and bucket, the
client events, the nemesis's and the application's ops, and the ops behind each
anomaly witness of results.json.

A contract (docs/report-data.md): it grows only by addition, no key changes meaning,
and a reader ignores keys newer than itself. A key added later has a default, so a
file an older version wrote loads; a file without a key every version wrote, or cut
off, is one TrialError line naming what to re-run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from kafka_trial.contracts.lenient import Ints, Lenient, StrictInt, Text
from kafka_trial.contracts.run_files import load_json
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

REPORT_DATA_FILE = "report-data.json"


class _Row(BaseModel):
    # Frozen like the other contracts; keys a newer writer added are ignored. A
    # process is text in the analysis's frames: a number is read as its text.
    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)


class ThroughputBucket(_Row):
    bucket: int = Field(description="the bucket: it starts at t0 + bucket * bucket_s")
    f: str = Field(description="the op's kind (send, poll, txn, ...)")
    type: str = Field(description="the completion's type: ok, fail or info")
    n: int = Field(description="client ops of that kind that completed so in the bucket")


class LatencyBucket(_Row):
    bucket: int = Field(description="as in throughput")
    f: str = Field(description="the op's kind")
    p50: float | None = Field(description="median ms from invoke to completion")
    p99: float | None = Field(description="99th percentile, ms")
    max: float | None = Field(description="the slowest, ms")
    n: int = Field(description="ops of that kind completed in the bucket")


class OffsetRange(_Row):
    topic: str
    partition: int
    bucket: int = Field(description="as in throughput")
    lo: int = Field(description="the lowest offset in the bucket")
    hi: int = Field(description="the highest offset in the bucket")
    n: int = Field(description="sends or records in the bucket")
    kind: Literal["acked", "read"] = Field(
        description="acked: sends acknowledged with an offset; read: records read"
    )


class ClientEvent(_Row):
    time: int = Field(description="ns, on the history's clock")
    process: str
    f: str = Field(description="crash, leave, join, stall, assign, revoke or lost")


def _word(value: Any) -> str | None:
    return str(value) if value else None


# A word of a fault's label (its target, topology, toxic or mode), if it says one.
_Word = Annotated[str | None, BeforeValidator(_word)]
_Grudge = dict[int, frozenset[int]]


def _grudge(value: Any) -> _Grudge:
    if not isinstance(value, dict):
        return {}
    return {
        int(k): frozenset(x for x in v if isinstance(x, int))
        for k, v in value.items()
        if str(k).lstrip("-").isdigit() and isinstance(v, list)
    }


class OpFacts(_Row):
    """What the report reads of a nemesis or application op's value, which is the op's
    own (docs/history.md, "Nemesis ops"): each field is empty where the value does not
    hold it, or not in its type."""

    brokers: Ints = Field((), description="the nodes the fault hit")
    isolated: Ints = Field((), description="the brokers a partition isolated")
    grudge: Annotated[_Grudge, BeforeValidator(_grudge)] = Field(
        default_factory=dict, description="node -> the nodes it cannot hear"
    )
    leader: Lenient[StrictInt] = Field(None, description="the leader a fault cut from, or elected")
    target: _Word = Field(None, description="the role the fault targeted (leader, random, ...)")
    topology: _Word = Field(None, description="a partition's shape")
    toxic: _Word = Field(None, description="a degrade's toxic")
    mode: _Word = Field(None, description="drop, reject, ...")
    instance: Lenient[StrictInt] = Field(None, description="the application instance")
    pid: Lenient[StrictInt] = Field(None, description="an instance's process group leader")
    container: Text | None = Field(None, description="an instance's container")
    by: Text | None = Field(None, description="who ended an instance")
    exit_code: Lenient[StrictInt] = Field(None, description="how an instance ended")
    text: Text = Field("", description="a mark's text")

    @classmethod
    def of(cls, value: Any) -> OpFacts:
        return cls.model_validate(value) if isinstance(value, dict) else cls()

    @property
    def hit(self) -> tuple[int, ...]:
        """The brokers the op names: those it hit, else those it isolated."""
        return self.brokers or self.isolated


class _Op(_Row):
    index: int = Field(description="the op's index in history.jsonl")
    time: int = Field(description="ns, on the history's clock")
    type: str = Field(description="invoke, ok, fail or info")
    f: str = Field(description="the op's kind")
    value: Any = Field(None, description="the op's value, as the history holds it")

    @cached_property
    def facts(self) -> OpFacts:
        return OpFacts.of(self.value)


class NemesisOp(_Op):
    error: str | None = Field(None, description="why a fault did not take effect (added later)")


class AppEvent(_Op):
    process: str = Field(description="app-<i>: the instance")
    error: str | None = Field(None, description="why an instance could not be started")


class SentValue(_Row):
    """A send of a witness's value."""

    value: int
    process: str
    index: int = Field(description="the send op's completion (or its invoke, if open)")
    f: str = Field(description="send or txn")
    topic: str
    partition: int | None = Field(description="null: the partitioner's, never reported")
    offset: int | None = Field(description="null: none known")
    outcome: str = Field(description="ok, fail or info")
    time: int | None = Field(description="the completion's, ns; null: never completed")
    invoke_time: int | None = Field(description="the invoke's, ns")


class ReadValue(_Row):
    """A record a read returned."""

    value: int | None = Field(description="null: not one of the run's values")
    process: str
    index: int = Field(description="the read op")
    f: str = Field(description="poll or txn")
    role: str | None = Field(description="drain, app-output, ...; null: a consumer")
    topic: str
    partition: int
    offset: int
    time: int | None = Field(description="the read op's completion, ns")


class ReadPast(_Row):
    """A read that went past a witness's position."""

    p_topic: str = Field(description="the witness's topic")
    p_partition: int = Field(description="the witness's partition")
    p_offset: int = Field(description="the witness's offset")
    value: int | None
    process: str
    index: int
    role: str | None
    offset: int = Field(description="the offset read, beyond p_offset")
    time: int | None


class Witnesses(_Row):
    sends: tuple[SentValue, ...] = Field(description="every send of each witness value")
    reads: tuple[ReadValue, ...] = Field(description="every read of each witness value")
    at_position: tuple[ReadValue, ...] = Field(
        description="every read at each witness's position, whatever value it returned"
    )
    past_position: tuple[ReadPast, ...] = Field(
        (), description="per position, the first reads beyond it (added later)"
    )


R = TypeVar("R", bound=BaseModel)


def _moved(rows: Iterable[R], by_ns: int, *keys: str) -> tuple[R, ...]:
    return tuple(
        r.model_copy(update={k: getattr(r, k) - by_ns for k in keys if getattr(r, k) is not None})
        for r in rows
    )


class ReportData(_Row):
    t0: int = Field(description="the history's first op, ns")
    t1: int = Field(description="its last op, ns")
    bucket_s: int = Field(description="seconds per bucket: at most 400 buckets")
    throughput: tuple[ThroughputBucket, ...]
    latency_ms: tuple[LatencyBucket, ...]
    offsets: tuple[OffsetRange, ...]
    client_events: tuple[ClientEvent, ...] = Field(description="the first 2000")
    client_events_capped: bool = Field(description="there were more")
    nemesis: tuple[NemesisOp, ...] = Field(description="the first 2000, in index order")
    app_events: tuple[AppEvent, ...] = Field((), description="added later")
    witnesses: Witnesses
    history_uri: str | None = Field(None, description="the history aggregated")

    @classmethod
    def load(cls, path: Path) -> ReportData:
        """report-data.json at `path`, or one TrialError line: judge the history again."""
        return load_json(
            path,
            cls.model_validate,
            "report data",
            f"build it again: kafka-trial report --reanalyze {path.parent}",
        )

    def to_json(self) -> str:
        """The keys set when it was made, as the writer always wrote them: a key a
        version's writer leaves out (e.g. a nemesis op's error) stays out."""
        return json.dumps(self.model_dump(mode="json", exclude_unset=True), indent=2)

    def shifted(self, by_ns: int) -> ReportData:
        """Every history time moved `by_ns` earlier (the page's clock); the buckets
        count from t0, and an op's value is what it recorded: both left alone."""
        w = self.witnesses
        moved = w.model_copy(
            update={
                "sends": _moved(w.sends, by_ns, "time", "invoke_time"),
                "reads": _moved(w.reads, by_ns, "time"),
                "at_position": _moved(w.at_position, by_ns, "time"),
                "past_position": _moved(w.past_position, by_ns, "time"),
            }
        )
        return self.model_copy(
            update={
                "t0": self.t0 - by_ns,
                "t1": self.t1 - by_ns,
                "client_events": _moved(self.client_events, by_ns, "time"),
                "nemesis": _moved(self.nemesis, by_ns, "time"),
                "app_events": _moved(self.app_events, by_ns, "time"),
                "witnesses": moved,
            }
        )
