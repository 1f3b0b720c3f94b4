"""A hunt campaign, summed up per Kafka version and preset: what a findings entry
needs. Reads only what the campaign wrote (campaign.json, each run's history,
results and broker logs).

  python tools/hunt_summary.py RUNS_DIR/<campaign dir>

Per version and preset: runs and verdicts; transactions ok / aborted / unknown and the
client errors they ended with (a produce refused for an old epoch is a request that
reached the broker after its transaction ended); the forbidden anomalies and the runs
that had them; the faults that took effect; and counts of the broker log lines that
show transactions ended by the coordinator or requests refused as stale.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

# Broker log lines (INFO) that speak of a transaction ended behind the client's back
# or of a request that came too late for its producer epoch.
BROKER_LINES = {
    "transaction rolled back on its timeout": re.compile(
        r"rollback of ongoing transaction.*due to timeout|due to timeout", re.I
    ),
    "producer (re)initialized, epoch bumped": re.compile(
        r"Initialized transactionalId .* producer epoch", re.I
    ),
    "producer fenced / old epoch": re.compile(
        r"ProducerFenced|InvalidProducerEpoch|INVALID_PRODUCER_EPOCH|PRODUCER_FENCED|"
        r"smaller than the last seen epoch",
        re.I,
    ),
    "invalid transaction state": re.compile(r"InvalidTxnState|INVALID_TXN_STATE", re.I),
    "out of order sequence": re.compile(r"OutOfOrderSequence|OUT_OF_ORDER_SEQUENCE", re.I),
}
ANOMALIES = (
    "aborted-read",
    "torn-txn",
    "fenced-write",
    "lost-write",
    "duplicate",
    "G1c",
    "eos-output-lost",
    "eos-output-duplicate",
)


def takeovers(history: Path) -> Counter[str]:
    """Exactly-once copiers (txn ops with a poll micro-op): each time a copier instance
    (process) reads an input partition another instance read before, where it began
    against the offset the committed copies had reached when it was invoked:
    `at committed`, `rewound` (below it: C11's duplicate), `after info` (above it,
    where a transaction of unknown outcome ended: it committed), `skipped` (above it
    otherwise), or `first` (nothing committed yet)."""
    ops = [json.loads(line) for line in history.open()]
    invoked = {
        o["process"]: o["time"] for o in ops if o.get("f") == "txn" and o["type"] == "invoke"
    }
    done: list[tuple[int, dict[int, int]]] = []  # (completion time, partition -> next offset)
    unknown: list[tuple[int, dict[int, int]]] = []  # the same, of txns that ended info
    reader: dict[int, object] = {}
    out: Counter[str] = Counter()
    for o in ops:
        if o.get("f") != "txn":
            continue
        if o["type"] == "invoke":
            invoked[o["process"]] = o["time"]
            continue
        polls = [m for m in o["value"] if m.get("op") == "poll" and m.get("records")]
        if not polls:
            continue
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for r in polls[0]["records"]:
            first.setdefault(r["partition"], r["offset"])
            last[r["partition"]] = r["offset"] + 1
        start = invoked.get(o["process"], o["time"])
        for p, off in first.items():
            if reader.get(p) not in (None, o["process"]):
                committed = max((n.get(p, 0) for t, n in done if t < start), default=0)
                if committed == 0:
                    out["first"] += 1
                elif off == committed:
                    out["at committed"] += 1
                elif off < committed:
                    out["rewound"] += 1
                elif any(n.get(p) == off for t, n in unknown if t < start):
                    out["after info"] += 1
                else:
                    out["skipped"] += 1
            reader[p] = o["process"]
        if o["type"] == "ok":
            done.append((o["time"], last))
        elif o["type"] == "info":
            unknown.append((o["time"], last))
    return out


def summarize(camp: Path) -> dict[str, dict[str, object]]:
    state = json.loads((camp / "campaign.json").read_text())
    out: dict[str, dict[str, object]] = {}
    for key, entry in state["runs"].items():
        run = camp / entry["run_dir"]
        if not (run / "results.json").is_file():
            continue
        version = json.loads((run / "run.json").read_text()).get("kafka_version", "?")
        group = out.setdefault(
            f"{entry['name']} on {version}",
            {
                "runs": 0,
                "verdicts": Counter(),
                "txns": Counter(),
                "errors": Counter(),
                "anomalies": Counter(),
                "witness_runs": defaultdict(list),
                "faults": Counter(),
                "broker_lines": Counter(),
                "copier_takeovers": Counter(),
            },
        )
        group["runs"] += 1  # type: ignore[operator]
        group["verdicts"][entry.get("verdict")] += 1  # type: ignore[index]
        for line in (run / "history.jsonl").open():
            op = json.loads(line)
            if op.get("f") == "txn" and op["type"] != "invoke":
                group["txns"][op["type"]] += 1  # type: ignore[index]
                if op.get("error"):
                    group["errors"][op["error"].split(",")[0]] += 1  # type: ignore[index]
            if op.get("process") == "nemesis" and op["type"] == "ok" and op["f"] != "heal-all":
                group["faults"][op["f"]] += 1  # type: ignore[index]
        group["copier_takeovers"].update(takeovers(run / "history.jsonl"))  # type: ignore[attr-defined]
        res = json.loads((run / "results.json").read_text())
        for a in ANOMALIES:
            n = (res["anomalies"].get(a) or {}).get("count") or 0
            if n:
                group["anomalies"][a] += n  # type: ignore[index]
                group["witness_runs"][a].append(key)  # type: ignore[index]
        for log in (run / "logs").glob("kafka-*.log"):
            for line in log.open(errors="replace"):
                for name, pattern in BROKER_LINES.items():
                    if pattern.search(line):
                        group["broker_lines"][name] += 1  # type: ignore[index]
    return out


def main() -> None:
    camp = Path(sys.argv[1])
    for name, g in sorted(summarize(camp).items()):
        print(f"## {name}: {g['runs']} runs, verdicts {dict(g['verdicts'])}")  # type: ignore[arg-type]
        for field in ("txns", "errors", "anomalies", "faults", "broker_lines", "copier_takeovers"):
            print(f"  {field}: {dict(g[field])}")  # type: ignore[call-overload]
        for a, runs in g["witness_runs"].items():  # type: ignore[attr-defined]
            print(f"  {a} in: {', '.join(runs)}")


if __name__ == "__main__":
    main()
