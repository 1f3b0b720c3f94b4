"""Did a librdkafka producer send later messages ahead of an earlier request's retry?

Reads a run's clients.log written with the producer's librdkafka debug contexts
`broker,msg,protocol` (examples/campaigns/hunt-inflight1.yaml sets them) and, per
client and broker connection, replays what librdkafka logged: a message set is built
("Produce MessageSet"), later sent ("Sent ProduceRequest"), and either delivered or
failed with a retry. librdkafka builds the next request of a partition while one is
still in flight, even with max.in.flight 1; when the one in flight then fails and
its messages go back to be retried, the request built meanwhile holds later messages
and is sent first. Each such case is printed with its times and message counts.

  python tools/retry_order.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path

_LINE = re.compile(
    r"^\S+ (?P<time>\S+) (?P<fac>[A-Z_]+) \[(?P<client>[^\]\s]+#producer-\d+)\] "
    r"\[thrd:(?P<thread>[^\]]+)\]: (?P<msg>.*)$"
)
_BUILT = re.compile(r"(?P<tp>\S+ \[\d+\]): Produce MessageSet with (?P<n>\d+) message")
_SENT = re.compile(r"Sent ProduceRequest \(.*CorrId (?P<corr>\d+)\)")
_RESPONSE = re.compile(r"Received ProduceResponse \(.*CorrId (?P<corr>\d+),")
_FAILED = re.compile(
    r"(?P<tp>\S+ \[\d+\]): MessageSet with (?P<n>\d+) message.*encountered error: "
    r"(?P<error>.*) \(actions (?P<actions>[^)]*)\)"
)


@dataclass(frozen=True)
class MessageSet:
    tp: str
    n: int
    built: str  # the log's wall-clock time


@dataclass(frozen=True)
class Overtaken:
    """A failed request whose retry came after a request built before it failed."""

    client: str
    thread: str
    failed: MessageSet
    failed_at: str
    error: str
    ahead: MessageSet


def overtaken(log: Path) -> list[Overtaken]:
    built: dict[tuple[str, str], deque[MessageSet]] = defaultdict(deque)
    in_flight: dict[tuple[str, str, str], MessageSet] = {}
    # The response a failure line is about: the one logged just before it on the
    # connection. (A transport failure fails what was in flight with no response;
    # those are left out, as which request each message set was in is not logged.)
    answered: dict[tuple[str, str], str | None] = {}
    found: list[Overtaken] = []
    for line in log.read_text(errors="replace").splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        conn, msg = (m["client"], m["thread"]), m["msg"]
        response = answered.get(conn)
        if m["fac"] != "REQERR":  # logged between a response and its message sets
            answered[conn] = None
        if m["fac"] == "FAIL":
            # A connection that goes down takes its built and unsent requests with it:
            # their messages go back to the partition queue and are built again.
            built[conn].clear()
        elif b := _BUILT.search(msg):
            built[conn].append(MessageSet(b["tp"], int(b["n"]), m["time"]))
        elif (s := _SENT.search(msg)) and built[conn]:
            in_flight[(*conn, s["corr"])] = built[conn].popleft()
        elif r := _RESPONSE.search(msg):
            answered[conn] = r["corr"]
        elif (f := _FAILED.search(msg)) and "Retry" in f["actions"] and response:
            failed = in_flight.get((*conn, response))
            if failed is None or failed.tp != f["tp"]:
                continue
            ahead = next((a for a in built[conn] if a.tp == failed.tp), None)
            if ahead is not None:
                found.append(
                    Overtaken(m["client"], m["thread"], failed, m["time"], f["error"], ahead)
                )
    return found


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    code = 0
    for run in map(Path, argv):
        log = run / "clients.log"
        if not log.is_file():
            print(
                f"retry_order: {run} has no clients.log -- fix: give a run directory of a "
                "run with producer.librdkafka.debug set",
                file=sys.stderr,
            )
            code = 1
            continue
        cases = overtaken(log)
        print(f"{run.name}: {len(cases)} request(s) sent ahead of an earlier one's retry")
        for c in cases:
            print(
                f"  {c.client} {c.thread} {c.failed.tp}: {c.failed.n} message(s) built "
                f"{c.failed.built} failed {c.failed_at} ({c.error}); {c.ahead.n} later "
                f"message(s), built {c.ahead.built}, went first"
            )
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
