"""Why was a value written twice? Each duplicated value of a run, against what its
producer client was told and what librdkafka's own debug log says it did.

  python tools/duplicate_timeline.py RUN_DIR [--topic T] [--show N]

From history.jsonl: every value read at two or more positions of one topic, the
send micro-op that carried it (one produce() call: client, seq, outcome, error),
and whether that client had messages time out (`_MSG_TIMED_OUT`) before, on which
partitions. Each duplicate falls in one class:

- `own-timeout`: its own send ended `_MSG_TIMED_OUT` (librdkafka: possibly persisted);
- `client-timeout`: acknowledged, but its client timed messages out before it was
  acknowledged (on the same partition or another): the epoch bump after a timeout
  re-sends retried messages under new sequence numbers (librdkafka #4953);
- `no-timeout`: neither; not the documented behaviour.

With the producer's debug log on (`producer.librdkafka.debug: eos,msg,protocol`,
clients named `kt-producer-C`), it also prints, for the first N duplicates, every
message set that carried the value's librdkafka MsgId (its epoch and base
sequence) and the client's epoch bumps: the resend under a new epoch, if it is one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

_SET = re.compile(
    r"^(?P<time>\S+ \S+) PRODUCE \[kt-producer-(?P<client>\d+)#producer-\d+\] .*?: "
    r"(?P<topic>\S+) \[(?P<part>\d+)\]: Produce MessageSet with (?P<n>\d+) message.*?"
    r"MsgId (?P<msgid>\d+), BaseSeq (?P<seq>-?\d+), PID\{Id:(?P<pid>-?\d+),Epoch:(?P<epoch>-?\d+)"
)
_BUMP = re.compile(
    r"^(?P<time>\S+ \S+) \S+ \[kt-producer-(?P<client>\d+)#producer-\d+\] .*"
    r"(?P<what>bumped epoch to PID\{[^}]*\}|timed out \d+\+\d+ message\(s\) \(MsgId [^)]*\))"
)


@dataclass(frozen=True)
class Sent:
    client: int
    topic: str
    partition: int
    value: int
    outcome: str
    offset: int | None
    error: str | None
    done_ns: int
    msgid: int  # librdkafka's per-partition message id: the client's k-th produce() there


def _history(run_dir: Path) -> tuple[list[Sent], dict[tuple[str, int], set[tuple[int, int]]]]:
    invokes: dict[int, list[dict]] = {}
    sends: list[tuple[int, dict, str | None, int]] = []
    read: dict[tuple[str, int], set[tuple[int, int]]] = defaultdict(set)
    for line in (run_dir / "history.jsonl").open():
        try:
            op = json.loads(line)
        except json.JSONDecodeError:
            continue  # a cut-off last line
        if not isinstance(op.get("value"), list):
            continue
        if op["type"] == "invoke":
            invokes[op["process"]] = op["value"]
            continue
        for m in op["value"]:
            if m.get("op") == "send" and m.get("client") is not None:
                sends.append((m["seq"], m, op.get("error"), op["time"]))
            for r in m.get("records", ()) if m.get("op") == "poll" else ():
                read[(r["topic"], r["value"])].add((r["partition"], r["offset"]))
    counts: Counter[tuple[int, str, int]] = Counter()
    out = []
    for _, m, error, t in sorted(sends, key=lambda s: (s[1]["client"], s[0])):
        key = (m["client"], m["topic"], m["partition"])
        counts[key] += 1
        out.append(
            Sent(m["client"], m["topic"], m["partition"], m["value"], m["outcome"],
                 m.get("offset"), error, t, counts[key])
        )  # fmt: skip
    return out, read


def classify(run_dir: Path, topic: str | None) -> list[tuple[str, Sent, list[tuple[int, int]]]]:
    sends, read = _history(run_dir)
    timeouts: dict[int, list[Sent]] = defaultdict(list)
    for s in sends:
        if s.error and "_MSG_TIMED_OUT" in s.error and s.outcome == "info":
            timeouts[s.client].append(s)
    by_value = {(s.topic, s.value): s for s in sends}
    found = []
    for (t, v), positions in sorted(read.items()):
        if len(positions) < 2 or (topic and t != topic) or (t, v) not in by_value:
            continue
        s = by_value[(t, v)]
        if s.outcome == "info" and s.error and "_MSG_TIMED_OUT" in s.error:
            why = "own-timeout"
        elif any(x.done_ns <= s.done_ns for x in timeouts[s.client]):
            why = "client-timeout"
        else:
            why = "no-timeout"
        found.append((why, s, sorted(positions)))
    return found


def _log_lines(run_dir: Path, client: int, topic: str, part: int, msgid: int) -> list[str]:
    log = run_dir / "clients.log"
    if not log.exists():
        return []
    out = []
    for line in log.open(errors="replace"):
        if f"kt-producer-{client}#" not in line:
            continue
        m = _SET.match(line)
        if m and m["topic"] == topic and int(m["part"]) == part:
            lo = int(m["msgid"])
            if lo <= msgid < lo + int(m["n"]):
                out.append(
                    f"    {m['time']} sent in a set of {m['n']} from MsgId {lo}: epoch "
                    f"{m['epoch']}, BaseSeq {m['seq']} (this message's seq "
                    f"{int(m['seq']) + msgid - lo})"
                )
        elif (b := _BUMP.match(line)) is not None:
            out.append(f"    {b['time']} client: {b['what']}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--topic", help="only this topic (e.g. the input, not TOPIC-out)")
    ap.add_argument("--show", type=int, default=2, help="duplicates to show with the log")
    a = ap.parse_args()
    found = classify(a.run_dir, a.topic)
    print(f"{a.run_dir.name}: {len(found)} duplicated values")
    for why, n in Counter(w for w, _, _ in found).most_common():
        print(f"  {why}: {n}")
    for why, s, positions in found[: a.show]:
        print(
            f"value {s.value} ({why}): {s.topic} p{s.partition} at {positions}; sent once by "
            f"client {s.client} (MsgId {s.msgid}), {s.outcome} at offset {s.offset}, "
            f"error {s.error}"
        )
        print("\n".join(_log_lines(a.run_dir, s.client, s.topic, s.partition, s.msgid)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
