"""Hand-built histories for checker tests: a tiny DSL over the real HistoryWriter."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.harness.spec import RunSpec

TOPIC = "t"


def send(
    value: int, partition: int, offset: int | None = None, outcome: str | None = None
) -> dict[str, Any]:
    m: dict[str, Any] = {"op": "send", "topic": TOPIC, "partition": partition, "value": value}
    if outcome is not None:
        m.update(offset=offset, outcome=outcome)
    return m


def rec(value: int | None, partition: int, offset: int, topic: str = TOPIC) -> dict[str, Any]:
    return {"topic": topic, "partition": partition, "offset": offset, "value": value}


class Builder:
    """Writes a history through HistoryWriter, so tests exercise the real format."""

    def __init__(
        self,
        run_dir: Path,
        allowed: tuple[str, ...] = (),
        faults: tuple[str, ...] = (),
        cycles: str = "auto",
    ) -> None:
        """faults: the packages the spec asks for (a run that asked for some and shows
        no fault op is `unknown`); a planted history asks for none by default.
        cycles: check.cycles."""
        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        spec = RunSpec.model_validate(
            {
                "check": {"allowed": list(allowed), "cycles": cycles},
                "nemesis": {"faults": list(faults)},
            }
        )
        (run_dir / "spec.json").write_text(spec.to_json())
        self.h = HistoryWriter(run_dir / "history.jsonl")
        self._seqs: dict[int, itertools.count[int]] = {}

    def sends(
        self,
        process: int,
        acks: list[tuple[int, int, int | None, str]],
        op_type: str | None = None,
        client: int | None = None,
    ) -> Builder:
        """acks: (value, partition, offset, outcome) in invocation order. With `client`,
        each send records that producer client and its next produce() sequence number,
        as the producer workload writes them."""
        ids: list[dict[str, Any]] = [{} for _ in acks]
        if client is not None:
            seq = self._seqs.setdefault(client, itertools.count())
            ids = [{"client": client, "seq": next(seq)} for _ in acks]
        self.h.invoke(
            process,
            "send",
            [{**send(v, p), **i} for (v, p, _, _), i in zip(acks, ids, strict=True)],
        )
        outcomes = {o for _, _, _, o in acks}
        t = op_type or (outcomes.pop() if len(outcomes) == 1 else "info")
        self.h.complete(
            t,
            process,
            "send",
            [{**send(v, p, off, o), **i} for (v, p, off, o), i in zip(acks, ids, strict=True)],
        )
        return self

    def txn(
        self,
        process: int,
        sends: list[tuple[int, int, int | None]],
        op_type: str,
        polled: list[tuple[int, int, int]] | None = None,
        client: int | None = None,
    ) -> Builder:
        """sends: (value, partition, offset); op_type is the outcome of all of them.
        polled: (value, partition, offset) records a poll micro-op inside the
        transaction returned, written after the sends. With `client`, each send records
        that producer client and its next produce() sequence number, as the
        transactional workers write them; op_type "invoke" leaves the op open."""
        ids: list[dict[str, Any]] = [{} for _ in sends]
        if client is not None:
            seq = self._seqs.setdefault(client, itertools.count())
            ids = [{"client": client, "seq": next(seq)} for _ in sends]
        invoke = [{**send(v, p), **i} for (v, p, _), i in zip(sends, ids, strict=True)]
        done = [{**send(v, p, o, op_type), **i} for (v, p, o), i in zip(sends, ids, strict=True)]
        if polled is not None:
            invoke.append({"op": "poll"})
            done.append({"op": "poll", "records": [rec(v, p, o) for v, p, o in polled]})
        self.h.invoke(process, "txn", invoke)
        if op_type != "invoke":
            self.h.complete(op_type, process, "txn", done)
        return self

    def poll(
        self,
        process: int,
        records: list[tuple[int | None, int, int]],
        role: str | None = None,
        at_end: dict[int, int] | None = None,
        held: dict[int, int | None] | None = None,
        topic: str = TOPIC,
    ) -> Builder:
        """role: "drain" marks the final drain's polls, as workloads/drain.py writes them;
        at_end: partition -> end offset, the partitions the poll read to their end;
        held: partition -> high watermark, the partitions whose end it found held below
        it by an open transaction."""
        micro: dict[str, Any] = {"op": "poll"} if role is None else {"op": "poll", "role": role}
        self.h.invoke(process, "poll", [micro])
        done = {**micro, "records": [rec(v, p, o, topic) for v, p, o in records]}
        if at_end:
            done["at_end"] = [
                {"topic": topic, "partition": p, "offset": o} for p, o in at_end.items()
            ]
        if held:
            done["held"] = [{"topic": topic, "partition": p, "offset": o} for p, o in held.items()]
        self.h.complete("ok", process, "poll", [done])
        return self

    def polls(self, process: int, batches: list[list[tuple[int | None, int, int]]]) -> Builder:
        """One poll op holding one poll micro-op per batch of records, in order: the
        format allows several (Jepsen's histories have them)."""
        self.h.invoke(process, "poll", [{"op": "poll"} for _ in batches])
        done = [{"op": "poll", "records": [rec(v, p, o) for v, p, o in rs]} for rs in batches]
        self.h.complete("ok", process, "poll", done)
        return self

    def drain(
        self,
        process: int,
        records: list[tuple[int | None, int, int]],
        at_end: dict[int, int] | None = None,
        held: dict[int, int | None] | None = None,
    ) -> Builder:
        return self.poll(process, records, role="drain", at_end=at_end, held=held)

    def op(self, process: int, f: str, micro: dict[str, Any], op_type: str = "ok") -> Builder:
        """Any client op whose invoke and completion carry the same single micro-op."""
        self.h.invoke(process, f, [micro])
        self.h.complete(op_type, process, f, [micro])
        return self

    def processed(self, process: int, records: list[tuple[int, int, int]]) -> Builder:
        return self.op(
            process, "process", {"op": "process", "records": [rec(v, p, o) for v, p, o in records]}
        )

    def group_offsets(
        self, process: int, offsets: dict[int, int], role: str = "consumer"
    ) -> Builder:
        return self.op(
            process,
            "group-offsets",
            {
                "op": "group-offsets",
                "role": role,
                "offsets": [
                    {"topic": TOPIC, "partition": p, "offset": o} for p, o in offsets.items()
                ],
            },
        )

    def copy(
        self,
        process: int,
        records: list[tuple[int, int, int]],
        outputs: list[tuple[int, int, int]],
        op_type: str = "ok",
    ) -> Builder:
        """A copier txn: input records read, (value, partition, offset) written to t-out."""

        def out(v: int, p: int) -> dict[str, Any]:
            return {"op": "send", "topic": f"{TOPIC}-out", "partition": p, "value": v}

        self.h.invoke(process, "txn", [{"op": "poll"}, *[out(v, p) for v, p, _ in outputs]])
        self.h.complete(
            op_type,
            process,
            "txn",
            [
                {"op": "poll", "records": [rec(v, p, o) for v, p, o in records]},
                *[{**out(v, p), "offset": o, "outcome": op_type} for v, p, o in outputs],
            ],
        )
        return self

    def read_out(self, process: int, records: list[tuple[int, int, int]]) -> Builder:
        recs = [
            {"topic": f"{TOPIC}-out", "partition": p, "offset": o, "value": v}
            for v, p, o in records
        ]
        self.h.invoke(process, "poll", [{"op": "poll"}])
        self.h.complete("ok", process, "poll", [{"op": "poll", "records": recs}])
        return self

    def nemesis(self, f: str, value: dict[str, Any]) -> Builder:
        self.h.invoke("nemesis", f, value)
        self.h.complete("ok", "nemesis", f, value)
        return self

    def hijack(self, client: int | None, op_type: str = "ok", tid: str = "kt-r-0") -> Builder:
        """A takeover of `tid` (nemesis op hijack-txn) whose completion names the
        session it fenced, as nemesis/hijack.py writes it (`client` None: none named)."""
        self.h.invoke("nemesis", "hijack-txn", {"target": "transactional-id"})
        done: dict[str, Any] = {"target": "transactional-id"}
        if op_type == "ok":
            done |= {"transactional_id": tid, "workload": "producer", "init_returned": True}
            done |= {"init_s": 0.1, "closed": True, "producer_id": 7, "epoch": 3}
            if client is not None:
                done["client"] = client
        self.h.complete(op_type, "nemesis", "hijack-txn", done, None if op_type == "ok" else "x")
        return self

    def done(self) -> Path:
        self.h.close()
        return self.run_dir


# The app on trial's output topic in the app histories below.
APP_OUT = f"{TOPIC}-out"


def app_inputs(
    tmp_path: Path,
    guarantee: str = "exactly-once",
    per_key_order: bool | None = None,
    committed: dict[int, int] | None = None,
) -> Builder:
    """An app's run up to its output: five acknowledged inputs (1-3 in partition 0,
    4-5 in 1), drained to their end; the app started, and its group committed
    `committed` (default: past every input). The caller adds the output drain's polls
    of APP_OUT."""
    b = Builder(tmp_path)
    spec = json.loads((tmp_path / "spec.json").read_text())
    app: dict[str, Any] = {"command": "my-app", "guarantee": guarantee}
    if per_key_order is not None:
        app["per_key_order"] = per_key_order
    spec["app"] = app
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    b.h.invoke("app-0", "app-start", {"instance": 0})
    b.h.complete("ok", "app-0", "app-start", {"instance": 0, "pid": 4242})
    b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
    b.sends(1, [(4, 1, 0, "ok"), (5, 1, 1, "ok")])
    b.group_offsets(9, committed if committed is not None else {0: 3, 1: 2}, role="app")
    b.drain(8, [(1, 0, 0), (2, 0, 1), (3, 0, 2), (4, 1, 0), (5, 1, 1)], at_end={0: 3, 1: 2})
    return b


def rebalance(b: Builder, process: int, kind: str, partitions: list[int]) -> Builder:
    """An assign / revoke / lost op, as GroupWorker._record writes it (invoke, ok)."""
    return b.op(process, kind, {"op": kind, "partitions": partitions})


def group_poll(
    b: Builder,
    process: int,
    records: list[tuple[int | None, int, int]],
    events: list[tuple[str, list[int]]] = (),  # type: ignore[assignment]
) -> Builder:
    """A group consumer's poll and the rebalance events that happened during it, in
    the order the workload writes them: the poll's invoke and ok, then each event."""
    b.poll(process, records)
    for kind, partitions in events:
        rebalance(b, process, kind, partitions)
    return b


def lossy(run_dir: Path, lose: bool = True, storage: bool = False) -> Path:
    """Value 11 acknowledged at partition 0 offset 1 while broker 1 is killed; with
    `lose`, no read returns it although reads and the drain pass offset 1. With
    `storage`, a power loss and a corruption that did not take effect come first."""
    b = Builder(run_dir)
    b.sends(0, [(10, 0, 0, "ok")])
    if storage:
        lost = {"2": {"files": 3, "bytes": 1832663, "paths": ["trial-0/0.log"]}}
        b.nemesis("power-loss", {"target": "all", "brokers": [2], "lost": lost})
        b.nemesis("start", {"brokers": [2]})
        b.h.invoke("nemesis", "corrupt", {"target": "leader", "mode": "bitflip"})
        b.h.complete("info", "nemesis", "corrupt", None, "nothing corrupted: {'1': 'empty'}")
    b.nemesis("kill", {"target": "leader", "brokers": [1]})
    time.sleep(0.05)  # the fault band has a width
    b.sends(0, [(11, 0, 1, "ok"), (12, 0, 2, "ok")])
    b.nemesis("start", {"brokers": [1]})
    seen = [(10, 0, 0), (12, 0, 2)] if lose else [(10, 0, 0), (11, 0, 1), (12, 0, 2)]
    b.poll(1, seen)
    b.drain(2, seen, at_end={0: 3})
    return b.done()
