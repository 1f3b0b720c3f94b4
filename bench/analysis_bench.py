"""Benchmark: `analyze` on generated histories, against yardsticks measured in the same run.

    pip install -e '.[bench]'     # duckdb, for the yardstick
    python bench/analysis_bench.py [--sizes default,100k,2M,10M,50M] [--keep DIR] [--spark-master M]

For each size it writes a history of that many lines with planted anomalies whose
counts are known (lost writes, duplicates, reorders), then times, each in a fresh
subprocess:

- `analyze` (cold JVM, like `kafka-trial analyze`), with the peak RSS of the driver's
  process tree (Python plus the JVM it launches), sampled from /proc;
- if `results.json["analysis"]["cache"]` says a cache exists after it, a second
  `analyze` of the same directory (cold JVM, cached input);
- an independent DuckDB query (2 threads, JSON load included) computing the core
  checks: lost-write, duplicate, inconsistent-offsets, reorder, int-nonmonotonic-send,
  nonmonotonic-poll and int-nonmonotonic-poll;
- once per run, a bare local SparkSession start + stop: the yardstick for 100k lines,
  where JVM start-up is all that matters;
- Spark's floor: a fresh process that starts the session and parses the file into
  the analysis's flat rows once (every column of every row hashed, so no field is
  pruned), with no check at all. No plan of checks can beat it, so `floor / yardstick`
  against the goal says how much of the goal is left for the checks. And a lower
  one still: a fresh process that starts the session and counts the file's lines,
  with no parse (the least any Spark job over the file costs).

`default` is a history of the default run's shape (DEFAULT_SHAPE: ten values per send
op, producers only, a drain of ~1,000 records per poll). For it the benchmark also
times the cold analyze with Spark parsing the JSON (KAFKA_TRIAL_NATIVE_PARSE=0), to
say which parse is faster end to end, and what a user waits for from the end of the
drain to the printed verdict two ways: `kafka-trial analyze` in a fresh process, and
as `kafka-trial run` does it, with Spark and the native parse started as the final
heal begins (job.start_analysis_early) and the drain's lines appended over --drain-s.

Each analyze prints its stages (results.json `analysis.stages_s`), and each ratio is
printed beside issue 44's goal (GOALS, VERDICT_GOAL), its yardstick measured in the
same run.

Both engines must find exactly the planted counts; a mismatch is printed loudly and
the exit status is 1. The machine is shared and times are noisy; the ratios, measured
side by side in one run, are what the goals are about.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from array import array
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent))
import procfs

TOPIC = "t"
SEED = 20240611
# Per 100k lines, how many of each planted anomaly (at least MIN_PLANTED of each).
PLANTED_PER_100K = 6
MIN_PLANTED = 4
DRAIN_BATCH = 500
HOLE = -1  # a log slot reserved for a reordered send that has not arrived yet

# --- the history generator ---------------------------------------------------------


@dataclass
class Planted:
    """What the generator planted; `expected()` is what a correct checker reports."""

    lost_read_past: int = 0  # acked at an offset that another value holds; read past
    lost_truncated: int = 0  # acked beyond where the drain found the partition's end
    duplicate: int = 0  # written to the log twice
    reorder: int = 0  # a process's later send acked below its earlier one (across ops)

    def expected(self) -> dict[str, int]:
        # A read-past lost write is a truncate-and-rewrite: its offset holds another
        # value, which inconsistent-offsets sees as well. Every other check: zero.
        return {
            "lost-write": self.lost_read_past + self.lost_truncated,
            "inconsistent-offsets": self.lost_read_past,
            "duplicate": self.duplicate,
            "reorder": self.reorder,
        }


@dataclass
class _Producer:
    pid: int
    pending: list[tuple[int, int]] | None = None  # (partition, value) of the open op
    reorder: tuple[int, int] | None = None  # (partition, hole offset) its next op fills


@dataclass
class _Consumer:
    pid: int
    parts: list[int]
    pos: dict[int, int] = field(default_factory=dict)
    open: bool = False
    turn: int = 0


class HistoryGen:
    """Writes a history the way a run with producers, assign-mode consumers and a
    final drain would, by plain string formatting (json.dumps per op is several times
    slower). Each partition's log is an array of values; acks, consumer reads and the
    drain are all derived from it, so the planted anomalies are the only ones."""

    def __init__(
        self,
        fh: TextIO,
        seed: int = SEED,
        producers: int = 8,
        consumers: int = 3,
        partitions: int = 6,
        send_batch: tuple[int, int] = (1, 4),
        drain_batch: int = DRAIN_BATCH,
    ) -> None:
        self.fh = fh
        self.send_batch = send_batch
        self.drain_batch = drain_batch
        self.rng = random.Random(seed)
        self.lines = 0
        self.t = 0
        self.buf: list[str] = []
        self.next_pid = 0
        self.logs = [array("q") for _ in range(partitions)]
        self.hole: list[int | None] = [None] * partitions
        self.last_lost: list[int] = [-1] * partitions
        self.producers = [_Producer(self._pid()) for _ in range(producers)]
        self.consumers = [
            _Consumer(self._pid(), [p for p in range(partitions) if p % consumers == c])
            for c in range(consumers)
        ]
        for c in self.consumers:
            c.pos = dict.fromkeys(c.parts, 0)
        self.value = 0
        self.planted = Planted()
        self.gap = 0
        self.due = {"lost": 0, "dup": 0, "reorder": 0}

    def _pid(self) -> int:
        self.next_pid += 1
        return self.next_pid - 1

    def _emit(self, type_: str, process: int | str, f: str, value: str, error: str = "") -> None:
        proc = f'"{process}"' if isinstance(process, str) else process
        err = f',"error":"{error}"' if error else ""
        self.buf.append(
            f'{{"index":{self.lines},"time":{self.t},"type":"{type_}","process":{proc},'
            f'"f":"{f}","value":{value}{err}}}\n'
        )
        self.lines += 1
        self.t += 37_000 + (self.lines % 13) * 5_000
        if len(self.buf) >= 4096:
            self.fh.write("".join(self.buf))
            self.buf.clear()

    def _schedule(self, kind: str) -> None:
        self.due[kind] = self.lines + self.rng.randint(self.gap // 2, self.gap * 3 // 2)

    # -- producers

    def _invoke_send(self, pr: _Producer) -> None:
        rng, n = self.rng, len(self.logs)
        micros: list[tuple[int, int]] = []
        if pr.reorder is not None:
            micros.append((pr.reorder[0], self.value))
            self.value += 1
        for _ in range(rng.randint(*self.send_batch) - len(micros)):
            micros.append((rng.randrange(n), self.value))
            self.value += 1
        pr.pending = micros
        body = ",".join(
            f'{{"op":"send","topic":"{TOPIC}","partition":{p},"value":{v}}}' for p, v in micros
        )
        self._emit("invoke", pr.pid, "send", f"[{body}]")

    def _ack(self, pr: _Producer, i: int, p: int, v: int) -> int:
        """Write one acknowledged value to partition p's log; returns its acked offset.
        Plants at most the anomaly that is due, when this value can carry it."""
        log = self.logs[p]
        if i == 0 and pr.reorder is not None:
            x = pr.reorder[1]
            log[x] = v
            self.hole[p] = None
            pr.reorder = None
            self.planted.reorder += 1
            return x
        end = len(log)
        due = self.lines
        if (
            due >= self.due["lost"]
            and end > 0
            and log[end - 1] != HOLE
            and self.last_lost[p] != end - 1
            and self.hole[p] is None
        ):
            # Truncated and rewritten: acked at an offset another value now holds.
            self.last_lost[p] = end - 1
            self.planted.lost_read_past += 1
            self._schedule("lost")
            return end - 1
        if due >= self.due["dup"]:
            log.append(v)
            log.append(v)  # a retry written twice; the ack names the first copy
            self.planted.duplicate += 1
            self._schedule("dup")
            return end
        if due >= self.due["reorder"] and self.hole[p] is None and pr.reorder is None:
            # This value lands after a slot its process's next send will fill.
            log.append(HOLE)
            log.append(v)
            self.hole[p] = end
            pr.reorder = (p, end)
            self._schedule("reorder")
            return end + 1
        log.append(v)
        return end

    def _complete_send(self, pr: _Producer) -> None:
        assert pr.pending is not None
        micros, pr.pending = pr.pending, None
        r = self.rng.random()
        forced = pr.reorder is not None
        parts: list[str] = []
        err = ""
        if forced or r >= 0.07:
            kind = "ok"
            for i, (p, v) in enumerate(micros):
                off = self._ack(pr, i, p, v)
                parts.append(
                    f'{{"op":"send","topic":"{TOPIC}","partition":{p},"value":{v},'
                    f'"offset":{off},"outcome":"ok"}}'
                )
        elif r < 0.03:
            kind, err = "fail", "KafkaError{code=MSG_SIZE_TOO_LARGE}"
            parts = [
                f'{{"op":"send","topic":"{TOPIC}","partition":{p},"value":{v},'
                f'"offset":null,"outcome":"fail"}}'
                for p, v in micros
            ]
        else:
            # Timed out: each value may or may not be in the log; some acks came back.
            kind, err = "info", "KafkaError{code=_MSG_TIMED_OUT}"
            for p, v in micros:
                u = self.rng.random()
                if u < 0.5:
                    off: int | str = len(self.logs[p])
                    self.logs[p].append(v)
                    outcome = "ok"
                else:
                    if u < 0.75:
                        self.logs[p].append(v)
                    off, outcome = "null", "info"
                parts.append(
                    f'{{"op":"send","topic":"{TOPIC}","partition":{p},"value":{v},'
                    f'"offset":{off},"outcome":"{outcome}"}}'
                )
        self._emit(kind, pr.pid, "send", "[" + ",".join(parts) + "]", err)
        if kind == "info":
            pr.pid = self._pid()  # an indeterminate client is replaced, as producer.py does

    # -- consumers

    def _poll(self, c: _Consumer) -> None:
        if not c.open:
            c.open = True
            self._emit("invoke", c.pid, "poll", '[{"op":"poll"}]')
            return
        c.open = False
        left = self.rng.randrange(0, 16)
        recs: list[str] = []
        k = len(c.parts)
        c.turn += 1
        for j in range(k):
            if left <= 0:
                break
            p = c.parts[(c.turn + j) % k]
            log, pos = self.logs[p], c.pos[p]
            h = self.hole[p]
            readable = len(log) if h is None else h  # a consumer stops at the high watermark
            n = min(left, readable - pos)
            for o in range(pos, pos + n):
                recs.append(f'{{"topic":"{TOPIC}","partition":{p},"offset":{o},"value":{log[o]}}}')
            c.pos[p] = pos + max(n, 0)
            left -= max(n, 0)
        self._emit("ok", c.pid, "poll", '[{"op":"poll","records":[' + ",".join(recs) + "]}]")

    # -- the run

    def _nemesis(self, f: str) -> None:
        value = '{"fault":"partition","nodes":["kafka-1"],"grudge":{"kafka-1":["kafka-2"]}}'
        self._emit("invoke", "nemesis", f, value)
        self._emit("ok", "nemesis", f, value)

    def _logged(self) -> int:
        return sum(len(log) for log in self.logs)

    def run(self, target_lines: int) -> Planted:
        per = max(MIN_PLANTED, target_lines * PLANTED_PER_100K // 100_000)
        self.gap = max(1, target_lines * 9 // 10 // per)
        for kind in self.due:
            self._schedule(kind)
        nemesis_every = max(2_000, target_lines // 20)
        next_nemesis = nemesis_every
        truncated = max(1, per // 4)
        # The tail (pending ops, the truncated partition, the drain) takes a few lines.
        while self.lines + 2 * (self._logged() // self.drain_batch) + 60 < target_lines:
            for pr in self.producers:
                if pr.pending is None:
                    self._invoke_send(pr)
                else:
                    self._complete_send(pr)
            for c in self.consumers:
                self._poll(c)
            if self.lines >= next_nemesis:
                self._nemesis("start-partition" if next_nemesis // nemesis_every % 2 else "heal")
                next_nemesis += nemesis_every
        self.due = dict.fromkeys(self.due, 1 << 62)  # nothing more to plant but the tail
        for pr in self.producers:
            while pr.pending is not None or pr.reorder is not None:
                if pr.pending is None:
                    self._invoke_send(pr)
                else:
                    self._complete_send(pr)
        for c in self.consumers:
            if c.open:
                self._poll(c)
        self._truncate_tail(self.producers[0], truncated)
        self._drain()
        self.fh.write("".join(self.buf))
        self.buf.clear()
        return self.planted

    def _truncate_tail(self, pr: _Producer, n: int) -> None:
        """Acks for offsets past partition 0's end: the leader acked them, then an
        unclean election truncated the log below them (the drain finds the end lower)."""
        end = len(self.logs[0])
        vals = list(range(self.value, self.value + n))
        self.value += n
        inv = ",".join(f'{{"op":"send","topic":"{TOPIC}","partition":0,"value":{v}}}' for v in vals)
        done = ",".join(
            f'{{"op":"send","topic":"{TOPIC}","partition":0,"value":{v},'
            f'"offset":{end + i},"outcome":"ok"}}'
            for i, v in enumerate(vals)
        )
        self._emit("invoke", pr.pid, "send", f"[{inv}]")
        self._emit("ok", pr.pid, "send", f"[{done}]")
        self.planted.lost_truncated += n

    def _drain(self) -> None:
        pid = self._pid()
        records: list[tuple[int, int, int]] = []
        for p, log in enumerate(self.logs):
            for o in range(len(log)):
                assert log[o] != HOLE, "a reordered send never arrived"
            records.extend((p, o, log[o]) for o in range(len(log)))
        ends = [len(log) for log in self.logs]
        last_of = {}
        for i, (p, _, _) in enumerate(records):
            last_of[p] = i
        micro = '{"op":"poll","role":"drain"}'
        for i in range(0, len(records), self.drain_batch):
            chunk = records[i : i + self.drain_batch]
            recs = ",".join(
                f'{{"topic":"{TOPIC}","partition":{p},"offset":{o},"value":{v}}}'
                for p, o, v in chunk
            )
            done = [p for p, j in last_of.items() if i <= j < i + self.drain_batch]
            at_end = ",".join(
                f'{{"topic":"{TOPIC}","partition":{p},"offset":{ends[p]}}}' for p in done
            )
            tail = f',"at_end":[{at_end}]' if done else ""
            self._emit("invoke", pid, "poll", f"[{micro}]")
            self._emit(
                "ok", pid, "poll", f'[{{"op":"poll","role":"drain","records":[{recs}]{tail}}}]'
            )


# The default run's shape (`kafka-trial run` with no flags, 2026-11-26: 87,806 lines,
# 119 MB): producers only, ten values per send op, 3 partitions, and a drain that
# reads ~1,000 records per poll; no consumer runs during the load.
DEFAULT_RUN_LINES = 88_000
DEFAULT_SHAPE: dict[str, Any] = {
    "producers": 8,
    "consumers": 0,
    "partitions": 3,
    "send_batch": (10, 10),
    "drain_batch": 1_000,
}


def write_history(
    run: Path, lines: int, seed: int = SEED, shape: dict[str, Any] | None = None
) -> tuple[int, Planted]:
    from kafka_trial.harness.spec import RunSpec

    run.mkdir(parents=True, exist_ok=True)
    (run / "spec.json").write_text(RunSpec().to_json())
    with (run / "history.jsonl").open("w", buffering=1 << 20) as fh:
        gen = HistoryGen(fh, seed, **(shape or {}))
        planted = gen.run(lines)
    return gen.lines, planted


# --- the yardstick: DuckDB over the same file --------------------------------------

_REC = 'STRUCT(topic VARCHAR, partition BIGINT, "offset" BIGINT, value BIGINT)'
_OFF = 'STRUCT(topic VARCHAR, partition BIGINT, "offset" BIGINT)'
_MICRO = (
    'STRUCT(op VARCHAR, topic VARCHAR, partition BIGINT, value BIGINT, "offset" BIGINT, '
    f"outcome VARCHAR, resend BOOLEAN, role VARCHAR, records {_REC}[], at_end {_OFF}[])"
)

# Written from the definitions in checkers/anomalies.py, not from the Spark code.
# The generated histories hold no transactions and no rebalances, so the SQL leaves
# those refinements out (it says so rather than pretending to be complete).
DUCKDB_SQL = {
    "lost-write": "SELECT count(DISTINCT value) FROM lost",
    "duplicate": """
        SELECT count(*) FROM (SELECT value FROM observations WHERE value IS NOT NULL
                              GROUP BY value HAVING count(*) > 1)""",
    "inconsistent-offsets": """
        SELECT count(*) FROM (SELECT 1 FROM observations GROUP BY topic, partition, off
                              HAVING count(DISTINCT value) > 1)""",
    "reorder": """
        SELECT count(*) FROM (
            SELECT off, lag(off) OVER (PARTITION BY process, topic, partition
                                                 ORDER BY idx, pos) AS prev
            FROM sends WHERE outcome = 'ok' AND off IS NOT NULL)
        WHERE prev > off""",
    "int-nonmonotonic-send": """
        SELECT count(*) FROM (
            SELECT off, lag(off) OVER (PARTITION BY idx, topic, partition
                                                 ORDER BY pos) AS prev
            FROM sends WHERE outcome = 'ok' AND off IS NOT NULL)
        WHERE prev > off""",
    "unseen": """
        SELECT count(DISTINCT value) FROM never_read WHERE value NOT IN (SELECT value FROM lost)""",
    "unexpected": """
        SELECT count(DISTINCT value) + count(DISTINCT CASE WHEN value IS NULL
                                               THEN (topic, partition, off) END)
        FROM reads ANTI JOIN attempted USING (value)""",
    "aborted-read": """
        SELECT count(DISTINCT value) FROM reads SEMI JOIN (
            SELECT value FROM sends GROUP BY value HAVING bool_and(outcome = 'fail'))
        USING (value)""",
    "vanished-read": """
        WITH drain AS (SELECT * FROM reads WHERE role IS NOT DISTINCT FROM 'drain'),
        reach AS (SELECT topic, partition, max(off) AS drain_max FROM drain GROUP BY ALL)
        SELECT count(DISTINCT r.value) FROM reads r JOIN reach USING (topic, partition)
        WHERE r.role IS DISTINCT FROM 'drain' AND r.value IS NOT NULL AND r.off IS NOT NULL
          AND r.off <= drain_max AND r.value NOT IN (SELECT value FROM drain)""",
    "poll-skip": """
        SELECT count(DISTINCT (g.prev_idx, g.idx, g.process, g.topic, g.partition, g.prev, g.off))
        FROM consecutive g JOIN acked a ON a.topic = g.topic AND a.partition = g.partition
             AND a.off > g.prev AND a.off < g.off
        WHERE g.off > g.prev + 1 AND g.prev_idx <> g.idx""",
    "int-poll-skip": """
        SELECT count(DISTINCT (g.idx, g.process, g.topic, g.partition, g.prev, g.off))
        FROM consecutive g JOIN acked a ON a.topic = g.topic AND a.partition = g.partition
             AND a.off > g.prev AND a.off < g.off
        WHERE g.off > g.prev + 1 AND g.prev_idx = g.idx""",
    "nonmonotonic-poll": """
        SELECT count(*) FROM consecutive WHERE off <= prev AND prev_idx <> idx""",
    "int-nonmonotonic-poll": """
        SELECT count(*) FROM consecutive WHERE off <= prev AND prev_idx = idx""",
}


def duckdb_checks(history: Path, threads: int = 2) -> dict[str, Any]:
    import duckdb

    t0 = time.monotonic()
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SET preserve_insertion_order = false")
    cols = (
        "{'index': 'BIGINT', 'type': 'VARCHAR', 'process': 'VARCHAR', 'f': 'VARCHAR', "
        f"'value': '{_MICRO}[]'}}"
    )
    # The nemesis's values are objects, not micro-op lists: ignore_errors nulls them.
    con.execute(
        f"""CREATE TEMP TABLE micro AS
        SELECT "index" AS idx, type, process, f, unnest(value) AS m,
               generate_subscripts(value, 1) AS pos
        FROM read_ndjson('{history}', columns = {cols}, ignore_errors = true)
        WHERE process <> 'nemesis' AND value IS NOT NULL"""
    )
    t_load = time.monotonic() - t0
    con.execute(
        """CREATE TEMP TABLE sends AS
        SELECT m.value AS value, process, idx, pos, m.topic AS topic, m.partition AS partition,
               m."offset" AS off,
               CASE WHEN f = 'txn' THEN type ELSE coalesce(m.outcome, type) END AS outcome
        FROM micro WHERE type <> 'invoke' AND f IN ('send', 'txn') AND m.op = 'send'"""
    )
    con.execute(
        """CREATE TEMP TABLE reads AS
        SELECT r.value AS value, r.topic AS topic, r.partition AS partition,
               r."offset" AS off, idx, process, rpos, role, f
        FROM (SELECT idx, process, f, m.role AS role, unnest(m.records) AS r,
                     generate_subscripts(m.records, 1) AS rpos
              FROM micro WHERE type = 'ok' AND f IN ('poll', 'txn') AND m.op = 'poll')"""
    )
    con.execute(
        """CREATE TEMP TABLE drain_ends AS
        SELECT e.topic AS topic, e.partition AS partition, max(e."offset") AS end_offset
        FROM (SELECT unnest(m.at_end) AS e FROM micro
              WHERE type = 'ok' AND f = 'poll' AND m.role = 'drain')
        GROUP BY ALL"""
    )
    con.execute(
        """CREATE TEMP TABLE attempted AS SELECT DISTINCT m.value AS value FROM micro
        WHERE type = 'invoke' AND f IN ('send', 'txn') AND m.op = 'send'"""
    )
    con.execute("DROP TABLE micro")
    con.execute(
        """CREATE TEMP TABLE observations AS
        SELECT DISTINCT value, topic, partition, off FROM (
            SELECT value, topic, partition, off FROM reads
            UNION ALL
            SELECT value, topic, partition, off FROM sends
            WHERE outcome = 'ok' AND off IS NOT NULL)"""
    )
    con.execute(
        """CREATE TEMP TABLE consecutive AS SELECT * FROM (
            SELECT idx, process, topic, partition, off,
                   lag(off) OVER w AS prev, lag(idx) OVER w AS prev_idx
            FROM reads WHERE f = 'poll'
            WINDOW w AS (PARTITION BY process, topic, partition ORDER BY idx, rpos))
        WHERE prev IS NOT NULL"""
    )
    con.execute("CREATE TEMP TABLE acked AS SELECT * FROM sends WHERE outcome = 'ok'")
    con.execute(
        """CREATE TEMP TABLE never_read AS
        SELECT * FROM acked ANTI JOIN (SELECT DISTINCT value FROM reads) USING (value)"""
    )
    # lost-write: never read, and a read reached past its offset, or the drain found
    # the partition's end at or below it, or (no offset known) the drain read it all.
    con.execute(
        """CREATE TEMP TABLE lost AS
        WITH reach AS (SELECT topic, partition, max(off) AS max_read FROM reads GROUP BY ALL)
        SELECT DISTINCT n.value FROM never_read n
        LEFT JOIN reach USING (topic, partition) LEFT JOIN drain_ends d USING (topic, partition)
        WHERE (n.off IS NOT NULL AND (max_read >= n.off OR n.off >= d.end_offset))
           OR (n.off IS NULL AND n.partition IS NOT NULL AND d.end_offset IS NOT NULL)"""
    )
    counts = {name: con.execute(sql).fetchone()[0] for name, sql in DUCKDB_SQL.items()}
    return {"counts": counts, "load_s": t_load, "total_s": time.monotonic() - t0}


# --- children: each timed engine runs in a fresh process ---------------------------


def _child_analyze(run: Path, master: str | None, warm: bool) -> dict[str, Any]:
    t0 = time.monotonic()
    from kafka_trial.spark_analysis.job import analyze

    t_import = time.monotonic() - t0
    res = analyze(run, master)
    cold_end = time.time()
    mark = os.environ.get("BENCH_MARK")
    if mark:
        Path(mark).touch()  # the parent's sampler: the cold run's peaks end here
    out: dict[str, Any] = {
        "cold_end_epoch": cold_end,
        "import_s": t_import,
        "analysis": res["analysis"],
        # A check that did not run (check.cycles) has no count to compare.
        "counts": {k: v.get("count") for k, v in res["anomalies"].items() if not v.get("skipped")},
        "valid": res["valid"],
        "stats": {k: res["stats"].get(k) for k in ("ops", "sends_attempted", "records_read")},
    }
    if warm:
        t1 = time.monotonic()
        again = analyze(run, master)
        out["warm_s"] = time.monotonic() - t1
        out["warm_analysis"] = again["analysis"]
    return out


def _child_bare_spark(master: str) -> dict[str, Any]:
    t0 = time.monotonic()
    from kafka_trial.spark_analysis.spark.session import spark_session

    t_import = time.monotonic() - t0
    spark = spark_session(master)
    t_up = time.monotonic() - t0
    spark.stop()
    return {"import_s": t_import, "up_s": t_up, "total_s": time.monotonic() - t0}


def _child_floor(history: Path, master: str, parse: bool) -> dict[str, Any]:
    t0 = time.monotonic()
    from kafka_trial.spark_analysis.read.history_parse import flatten, read_json
    from kafka_trial.spark_analysis.spark.session import spark_session
    from pyspark.sql import functions as F

    spark = spark_session(master)
    t_up = time.monotonic() - t0
    if parse:
        rows = flatten(read_json(spark, history.as_uri()))
        # A hash of every column: the JSON reader prunes fields nothing uses.
        rows.select(F.max(F.xxhash64(*rows.columns))).collect()
    else:
        spark.read.text(history.as_uri()).count()
    t_done = time.monotonic() - t0
    spark.stop()
    return {"up_s": t_up, "done_s": t_done, "total_s": time.monotonic() - t0}


def _proc_table() -> dict[int, int]:
    """pid -> parent pid, for every process."""
    return {pid: st.ppid for pid in procfs.pids() if (st := procfs.stat(pid)) is not None}


def _xmx(pid: int) -> str | None:
    args = procfs.cmdline(pid) or []
    return next((a[4:] for a in args if a.startswith("-Xmx")), None)


@dataclass
class Measured:
    wall_s: float  # process start to exit, or to the end of the cold run (`_analyze`)
    result: dict[str, Any]
    tree_peak_mb: float  # largest sampled sum of VmRSS over the child's process tree
    hwm_mb: dict[str, float]  # per process (comm:pid): its kernel-recorded peak RSS
    jvm_xmx: str | None  # -Xmx of the biggest java process in the tree
    ok: bool
    stderr_tail: str = ""


class _Sampler:
    """The memory of one process tree, from /proc. The Spark driver JVM is a
    grandchild that Python does not wait for, so getrusage(RUSAGE_CHILDREN) misses it."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: set[int] = set()
        self.comm: dict[int, str] = {}
        self.xmx: dict[int, str] = {}
        self.hwm: dict[int, int] = {}
        self.peak_kb = 0

    def sample(self, root_alive: bool) -> int:
        """One sample; returns how many processes of the tree are still alive."""
        parents = _proc_table()
        if root_alive:
            kids: dict[int, list[int]] = {}
            for pid, pp in parents.items():
                kids.setdefault(pp, []).append(pid)
            tree, i = [self.root], 0
            while i < len(tree):
                tree += kids.get(tree[i], [])
                i += 1
        else:
            tree = [pid for pid in self.seen if pid in parents]
        total = 0
        for pid in tree:
            st = procfs.status_kb(pid, "VmRSS", "VmHWM")
            if not st:
                continue
            self.seen.add(pid)
            if self.comm.get(pid) != "java":
                # spark-submit is a shell script that execs java: read comm again.
                self.comm[pid] = procfs.comm(pid) or "?"
                if self.comm[pid] == "java":
                    self.xmx[pid] = _xmx(pid) or "?"
            total += st.get("VmRSS", 0)
            self.hwm[pid] = max(self.hwm.get(pid, 0), st.get("VmHWM", 0))
        self.peak_kb = max(self.peak_kb, total)
        return len(tree)

    def snapshot(self) -> tuple[float, dict[str, float], str | None]:
        big = {
            f"{self.comm.get(p, '?')}:{p}": kb / 1024
            for p, kb in self.hwm.items()
            if kb > 50 * 1024
        }
        jvms = sorted((kb, p) for p, kb in self.hwm.items() if p in self.xmx)
        return self.peak_kb / 1024, big, self.xmx[jvms[-1][1]] if jvms else None


def run_child(
    args: list[str],
    sample_s: float = 0.1,
    script: str = __file__,
    extra_env: dict[str, str] | None = None,
) -> Measured:
    """Run `script` (this one by default) as a child in `args` mode, sampling its
    process tree's memory. For `_analyze`, time and peaks are those of the first
    (cold) analyze."""
    with (
        tempfile.TemporaryFile("w+") as out,
        tempfile.TemporaryFile("w+") as err,
        tempfile.TemporaryDirectory() as mark_dir,
    ):
        mark = Path(mark_dir) / "cold-done"
        env = {**os.environ, **(extra_env or {}), "BENCH_MARK": str(mark)}
        t0, epoch0 = time.monotonic(), time.time()
        proc = subprocess.Popen([sys.executable, script, *args], stdout=out, stderr=err, env=env)
        s = _Sampler(proc.pid)
        cold: tuple[float, dict[str, float], str | None] | None = None
        wall: float | None = None
        deadline = 0.0
        while True:
            alive = s.sample(wall is None)
            if cold is None and mark.exists():
                cold = s.snapshot()
            if wall is None and proc.poll() is not None:
                wall = time.monotonic() - t0
                # The JVM may outlive Python: wait for it, so that the next
                # measurement starts on a quiet machine.
                deadline = time.monotonic() + 30
            elif wall is not None and (alive == 0 or time.monotonic() > deadline):
                break
            time.sleep(sample_s)
        out.seek(0)
        err.seek(0)
        text, errs = out.read(), err.read()
    line = next((ln for ln in text.splitlines() if ln.startswith("BENCH_JSON ")), None)
    result = json.loads(line[len("BENCH_JSON ") :]) if line else {}
    if "cold_end_epoch" in result:
        wall = result["cold_end_epoch"] - epoch0
    peak, hwm, xmx = cold or s.snapshot()
    ok = proc.returncode == 0 and bool(line)
    # Spark's first error (an OutOfMemoryError, say) sits far above Python's traceback.
    first = [ln for ln in errs.splitlines() if "Error" in ln or "Exception" in ln][:5]
    return Measured(wall or 0.0, result, peak, hwm, xmx, ok, "\n".join([*first, errs[-2000:]]))


# --- the run ----------------------------------------------------------------------


def parse_size(s: str) -> int:
    s = s.strip()
    if s == "default":
        return DEFAULT_RUN_LINES
    mult = {"k": 1_000, "K": 1_000, "m": 1_000_000, "M": 1_000_000}.get(s[-1], 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def size_label(n: int, shape: str = "") -> str:
    if shape == "default":
        return "default"
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k"


# The floors' modes (_child_floor), and what each measures.
FLOORS = {
    "parse": "floor (fresh process: session + one parse, no check)",
    "read": "read floor (fresh process: session + a count of the lines, no parse)",
}
# Issue 44's goals, by history: the yardstick ("bare": a bare session; "floor": Spark's
# floor for the same file, session plus one JSON parse; "duckdb") and the ratio.
# (Issue 29 held 2M to 1.5x its floor; the floor stays printed beside every row.)
GOALS = {
    "default": ("bare", 3.0),
    "100k": ("floor", 1.5),
    "2M": ("duckdb", 3.0),
    "10M": ("duckdb", 3.0),
    "50M": ("duckdb", 4.0),
}
# The default run: from the end of the drain to the printed verdict (`kafka-trial
# analyze`, report included), against a bare session.
VERDICT_GOAL = 4.0
# The default run's final heal and drain, which the early start overlaps: its drain's
# lines are appended over this long (--drain-s). A real default run, 2026-11-27: final
# heal 0.04 s, drain 5.2 s, then 2.7 s of clean-up before the judge (not simulated).
DRAIN_S = 5.0


def prepare(base: Path, n: int, shape: str = "") -> tuple[Path, dict[str, Any]]:
    """A run dir holding a history of n lines; reused from --keep if already there."""
    run = base / f"lines-{size_label(n, shape)}"
    meta_p = run / "bench_meta.json"
    if meta_p.is_file() and (run / "history.jsonl").is_file():
        meta = json.loads(meta_p.read_text())
        if meta.get("target") == n and meta.get("seed") == SEED and meta.get("shape") == shape:
            meta["reused"] = True
            meta["gen_s"] = None
            _clear_run_outputs(run)
            return run, meta
    t0 = time.monotonic()
    lines, planted = write_history(run, n, shape=DEFAULT_SHAPE if shape == "default" else None)
    gen_s = time.monotonic() - t0
    meta = {
        "target": n,
        "seed": SEED,
        "shape": shape,
        "lines": lines,
        "planted": asdict(planted),
        "expected": planted.expected(),
        "gen_s": gen_s,
    }
    meta_p.write_text(json.dumps(meta, indent=2))
    return run, meta


def _clear_run_outputs(run: Path) -> None:
    """Remove what earlier analyses left (results, any cache): the first analyze must
    read the JSON cold."""
    keep = {"history.jsonl", "spec.json", "bench_meta.json"}
    for p in run.iterdir():
        if p.name in keep:
            continue
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


def check_counts(engine: str, counts: dict[str, Any], expected: dict[str, int]) -> list[str]:
    from kafka_trial.checkers.anomalies import DEFAULT_ALLOWED

    bad = []
    for name, got in sorted(counts.items()):
        if name in DEFAULT_ALLOWED and name not in expected:
            # Normal behaviour the generator does not count (a planted reorder's hole
            # between one op's sends is an int-send-skip), and never a failure.
            continue
        want = expected.get(name, 0)
        if got != want:
            bad.append(f"{engine}: {name} = {got}, planted {want}")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes",
        default="default,100k,2M",
        help="history lines, e.g. default,100k,2M,10M,50M (default: the default run's shape)",
    )
    ap.add_argument("--keep", type=Path, help="write (and reuse) the histories under DIR")
    ap.add_argument("--spark-master", default=None, help="default: the spec's (local[*])")
    ap.add_argument(
        "--warm-up-to",
        default="2M",
        help="also time a second analyze in the same (warm) process up to this size",
    )
    ap.add_argument(
        "--cached-up-to",
        default=None,
        help="time the analyze of the cached input only up to this size (default: every "
        "size; at 50M it costs about as long again as the first analyze)",
    )
    ap.add_argument(
        "--drain-s",
        type=float,
        default=DRAIN_S,
        help="the default run's drain, simulated for the early-start verdict (seconds)",
    )
    a = ap.parse_args()
    sizes = [(parse_size(s), s.strip()) for s in a.sizes.split(",") if s.strip()]
    warm_max = parse_size(a.warm_up_to)
    cached_max = parse_size(a.cached_up_to) if a.cached_up_to else None
    master = a.spark_master or "local[*]"
    if os.environ.get("KAFKA_TRIAL_SPARK_DRIVER_MEMORY"):
        print("NOTE: KAFKA_TRIAL_SPARK_DRIVER_MEMORY is set: driver memory is not the default")
    tmp = None
    if a.keep:
        base = a.keep
        base.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="kt-bench-")
        base = Path(tmp.name)
    problems: list[str] = []
    rows: list[dict[str, Any]] = []
    try:
        bare = run_child(["_bare_spark", master])
        if not bare.ok:
            print(bare.stderr_tail)
            problems.append("bare SparkSession start+stop failed")
        print(
            f"bare SparkSession start+stop ({master}, fresh process): {bare.wall_s:.1f} s wall "
            f"(import {bare.result.get('import_s', 0):.1f} s, up "
            f"{bare.result.get('up_s', 0):.1f} s); tree peak RSS {bare.tree_peak_mb:.0f} MB"
        )
        for n, name in sizes:
            shape = "default" if name == "default" else ""
            cached = cached_max is None or n <= cached_max
            rows.append(
                bench_size(base, n, master, n <= warm_max, bare, problems, shape, cached, a.drain_s)
            )
    finally:
        if tmp is not None:
            tmp.cleanup()
    print_table(rows)
    for r in rows:
        if "verdict_s" in r:
            print(
                f"{r['label']}: native parse {r['spark_s']:.1f} s vs Spark's parse "
                f"{r['spark_parse_s']:.1f} s end to end; drain -> verdict {r['verdict_s']:.1f} s "
                f"= {r['verdict_ratio']:.2f}x bare in a fresh `kafka-trial analyze`, "
                f"{r['early_verdict_s']:.1f} s = {r['early_verdict_ratio']:.2f}x bare as "
                f"`kafka-trial run` does it (goal <= {VERDICT_GOAL:g}x)"
            )
        if r["verdict"] == "NO":
            print(f"GOAL MISSED at {r['label']}: ratio {r['ratio']:.1f}, goal {r['goal']}")
    if problems:
        print("\n!!!!!!!! MISMATCHES / FAILURES !!!!!!!!")
        for p in problems:
            print("  " + p)
        return 1
    print("\nboth engines found exactly the planted anomalies at every size")
    return 0


def _stages(an: dict[str, Any]) -> str:
    st = an.get("stages_s") or {}
    parser = an.get("parser") or "none (cache)"
    native = an.get("native_parse_s", 0)
    stages = ", ".join(f"{k} {v:.1f}" for k, v in st.items())
    return f"parser {parser}, native parse {native:.1f} s beside the session; stages {stages}"


def bench_size(
    base: Path,
    n: int,
    master: str,
    warm: bool,
    bare: Measured,
    problems: list[str],
    shape: str = "",
    time_cached: bool = True,
    drain_s: float = DRAIN_S,
) -> dict[str, Any]:
    label = size_label(n, shape)
    run, meta = prepare(base, n, shape)
    hist = run / "history.jsonl"
    mb = hist.stat().st_size / 1e6
    gen = meta["gen_s"]
    rate = f", {meta['lines'] / gen / 1e3:.0f}k lines/s" if gen else " (reused)"
    print(
        f"\n[{label}] {meta['lines']} lines, {mb:.0f} MB, generated in "
        f"{gen or 0:.1f} s{rate}; planted {meta['expected']}"
    )
    expected = meta["expected"]

    spark = run_child(["_analyze", str(run), master, "warm" if warm else "cold"])
    if not spark.ok:
        print(spark.stderr_tail)
        problems.append(f"{label}: analyze failed")
    sr = spark.result
    an = sr.get("analysis", {})
    print(
        f"[{label}] spark analyze (fresh process): {spark.wall_s:.1f} s wall; analyze() "
        f"{an.get('total_s', 0):.1f} s of which session {an.get('session_s', 0):.1f} s; "
        f"tree peak RSS {spark.tree_peak_mb:.0f} MB, per process {_fmt_hwm(spark.hwm_mb)}, "
        f"JVM -Xmx{spark.jvm_xmx}"
    )
    print(f"[{label}]   {_stages(an)}")
    if "warm_s" in sr:
        print(
            f"[{label}] spark analyze again in the same process (warm JVM): {sr['warm_s']:.1f} s"
            f" (cache: {sr['warm_analysis'].get('cache', 'none reported')})"
        )
    problems += [f"{label}: {p}" for p in check_counts("spark", sr.get("counts", {}), expected)]

    cached = None
    if an.get("cache") and not time_cached:
        print(f"[{label}] cache after the first analyze: {an['cache']}; not timed (--cached-up-to)")
    elif an.get("cache"):
        print(f"[{label}] cache after the first analyze: {an['cache']}")
        cached = run_child(["_analyze", str(run), master, "cold"])
        ca = cached.result.get("analysis", {})
        print(
            f"[{label}] spark analyze #2 (fresh process, cached input): {cached.wall_s:.1f} s "
            f"wall; analyze() {ca.get('total_s', 0):.1f} s; cache {ca.get('cache')}; tree "
            f"peak RSS {cached.tree_peak_mb:.0f} MB"
        )
        print(f"[{label}]   {_stages(ca)}")
        problems += [
            f"{label} (cached): {p}"
            for p in check_counts("spark", cached.result.get("counts", {}), expected)
        ]
    else:
        print(f"[{label}] no cache reported by analyze (results.json analysis: {sorted(an)})")

    duck = run_child(["_duckdb", str(hist)])
    if not duck.ok:
        print(duck.stderr_tail)
        problems.append(f"{label}: duckdb failed")
    dr = duck.result
    print(
        f"[{label}] duckdb yardstick (fresh process, 2 threads): {duck.wall_s:.1f} s wall; "
        f"query {dr.get('total_s', 0):.1f} s of which JSON load {dr.get('load_s', 0):.1f} s; "
        f"peak RSS {duck.tree_peak_mb:.0f} MB; counts {dr.get('counts')}"
    )
    duck_counts = dr.get("counts", {})
    problems += [f"{label}: {p}" for p in check_counts("duckdb", duck_counts, expected)]
    # Both engines on the checks both compute, so a wrong plant shows as disagreement too.
    for name, dv in duck_counts.items():
        sv = sr.get("counts", {}).get(name)
        if sv != dv:
            problems.append(f"{label}: spark and duckdb disagree on {name}: {sv} vs {dv}")

    floors = {mode: run_child(["_floor", str(hist), master, mode]) for mode in FLOORS}
    for mode, m in floors.items():
        if not m.ok:
            print(m.stderr_tail)
            problems.append(f"{label}: the floor's {mode} failed")
    kind, limit = GOALS.get(label, ("duckdb", None))
    yard = {"bare": bare, "floor": floors["parse"]}.get(kind, duck)

    def per_yard(m: Measured) -> float:
        return m.wall_s / yard.wall_s if yard.wall_s else float("nan")

    ratio = per_yard(spark)
    floor, read = floors["parse"], floors["read"]
    left = ""
    if limit:
        left = f"; at the goal, {limit * yard.wall_s - floor.wall_s:.1f} s are left for the checks"
    for mode, m in floors.items():
        print(
            f"[{label}] spark {FLOORS[mode]}: {m.wall_s:.1f} s wall (session up "
            f"{m.result.get('up_s', 0):.1f} s), {per_yard(m):.2f}x the {kind} yardstick"
            + (left if m is floor else "")
        )
    goal = f"<= {limit:g}x {kind}" if limit else "completes"
    passed = spark.ok if limit is None else (spark.ok and ratio <= limit)
    extra: dict[str, Any] = {}
    if shape == "default":
        extra = _default_run_extras(run, master, bare, spark, label, expected, problems, drain_s)
    if not spark.ok:
        ratio = float("nan")  # a crash's time is no result
    return {
        "label": label,
        "lines": meta["lines"],
        "mb": mb,
        "spark_s": spark.wall_s,
        "cached_s": cached.wall_s if cached else None,
        "warm_s": sr.get("warm_s"),
        "duckdb_s": duck.wall_s,
        "bare_s": bare.wall_s,
        "yard": kind,
        "ratio": ratio,
        "floor_s": floor.wall_s,
        "floor_ratio": per_yard(floor),
        "read_ratio": per_yard(read),
        "goal": goal,
        "verdict": "yes" if passed else ("NO" if spark.ok else "FAIL"),
        "rss_mb": spark.tree_peak_mb,
        "xmx": spark.jvm_xmx,
        **extra,
    }


def _default_run_extras(
    run: Path,
    master: str,
    bare: Measured,
    spark: Measured,
    label: str,
    expected: dict[str, int],
    problems: list[str],
    drain_s: float,
) -> dict[str, Any]:
    """The default run's other two figures: the same cold analyze with Spark parsing
    the JSON (native parse off: which is faster end to end), and what the user waits
    for after the drain, `kafka-trial analyze` (session, analysis, report, verdict
    printed) in a fresh process, against the bare session."""
    _clear_run_outputs(run)
    by_spark = run_child(
        ["_analyze", str(run), master, "cold"], extra_env={"KAFKA_TRIAL_NATIVE_PARSE": "0"}
    )
    sa = by_spark.result.get("analysis", {})
    problems += [
        f"{label} (Spark's parse): {p}"
        for p in check_counts("spark", by_spark.result.get("counts", {}), expected)
    ]
    print(
        f"[{label}] spark analyze with Spark parsing the JSON (native parse off): "
        f"{by_spark.wall_s:.1f} s wall, {by_spark.wall_s / bare.wall_s:.2f}x bare "
        f"(native: {spark.wall_s:.1f} s, {spark.wall_s / bare.wall_s:.2f}x)\n[{label}]   "
        f"{_stages(sa)}"
    )
    _clear_run_outputs(run)
    verdict = run_child(["_verdict", str(run), master])
    if not verdict.ok:
        print(verdict.stderr_tail)
        problems.append(f"{label}: kafka-trial analyze failed")
    ratio = verdict.wall_s / bare.wall_s
    print(
        f"[{label}] end of drain -> verdict printed (`kafka-trial analyze`, report included, "
        f"fresh process): {verdict.wall_s:.1f} s, {ratio:.2f}x bare, goal <= {VERDICT_GOAL:g}x: "
        f"{'yes' if ratio <= VERDICT_GOAL else 'NO'}"
    )
    _clear_run_outputs(run)
    early = run_child(["_verdict_early", str(run), master, str(drain_s)])
    if not early.ok:
        print(early.stderr_tail)
        problems.append(f"{label}: the early-start verdict failed")
    er = early.result
    problems += [
        f"{label} (early start): {p}" for p in check_counts("spark", er.get("counts", {}), expected)
    ]
    ea = er.get("analysis", {})
    early_s = er.get("verdict_s", float("nan"))
    early_ratio = early_s / bare.wall_s
    print(
        f"[{label}] the same as `kafka-trial run` does it (Spark and the parse started as the "
        f"final heal begins, the drain's lines appended over {er.get('drain_s', 0):.1f} s): "
        f"end of drain -> verdict printed {early_s:.1f} s, {early_ratio:.2f}x bare, goal <= "
        f"{VERDICT_GOAL:g}x: {'yes' if early_ratio <= VERDICT_GOAL else 'NO'}\n[{label}]   "
        f"session {ea.get('session_started')}, parsed during the run "
        f"{ea.get('parsed_during_run')}; {_stages(ea)}"
    )
    return {
        "spark_parse_s": by_spark.wall_s,
        "verdict_s": verdict.wall_s,
        "verdict_ratio": ratio,
        "early_verdict_s": early_s,
        "early_verdict_ratio": early_ratio,
    }


def _child_verdict(run: Path, master: str) -> dict[str, Any]:
    from kafka_trial.harness.cli import main as cli

    code = cli(["analyze", str(run), "--spark-master", master])
    return {"exit_code": code}


def _child_verdict_early(run: Path, master: str, drain_s: float) -> dict[str, Any]:
    """`kafka-trial run`'s way, with the drain simulated: the history up to its drain
    is there as the final heal begins, the analysis is started early
    (start_analysis_early: the session and the parse that follows the history), the
    drain's lines are appended evenly over `drain_s`, and then the run's judge is
    timed from the end of the drain to the printed verdict."""
    from kafka_trial.report.judge import judge
    from kafka_trial.spark_analysis.job import start_analysis_early

    data = (run / "history.jsonl").read_bytes()
    cut = data.rfind(b"\n", 0, data.index(b'"role":"drain"')) + 1
    sim = run.with_name(run.name + "-early")
    shutil.rmtree(sim, ignore_errors=True)
    sim.mkdir()
    shutil.copy(run / "spec.json", sim / "spec.json")
    hist = sim / "history.jsonl"
    hist.write_bytes(data[:cut])
    start_analysis_early(sim, master, one_shot=True)
    t0 = time.monotonic()
    step = 1 << 20
    with hist.open("ab") as fh:
        for i in range(cut, len(data), step):
            fh.write(data[i : i + step])
            fh.flush()
            pause = t0 + drain_s * (i + step - cut) / (len(data) - cut) - time.monotonic()
            time.sleep(max(0.0, pause))
    drained = time.monotonic()
    judged = judge(sim, spark_master=master, one_shot=True)
    verdict_s = time.monotonic() - drained
    res = judged.results
    assert res is not None
    out = {
        "verdict_s": verdict_s,
        "drain_s": drained - t0,
        "counts": {n: a.count for n, a in res.anomalies.items() if not a.skipped},
        "analysis": res.analysis.model_dump(),
    }
    shutil.rmtree(sim, ignore_errors=True)
    return out


def _fmt_hwm(h: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f} MB" for k, v in sorted(h.items())) or "-"


def print_table(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    print(
        "\nspark_s: `analyze` in a fresh process (cold JVM), wall; yardstick: duckdb_s (same "
        "file, fresh process, 2 threads,\nJSON load included) or, for 100k, a bare "
        "SparkSession start+stop in a fresh process. ratio = spark_s / yardstick.\n"
        "floor_s: a fresh process that only starts Spark and parses the file once (no check);\n"
        "floor = floor_s / yardstick, the least ratio any plan of checks could reach; read: the\n"
        "same for a process that only starts Spark and counts the file's lines.\n"
        "Noisy shared 2-core machine: compare the ratios, measured side by side, not the "
        "absolute times.\n"
    )
    head = (
        f"{'lines':>10} {'MB':>7} {'spark_s':>8} {'duckdb_s':>8} {'bare_s':>7} "
        f"{'vs':>6} {'ratio':>6} {'floor_s':>7} {'floor':>6} {'read':>5} {'goal':>13} {'ok':>4} "
        f"{'peakRSS_MB':>10} {'Xmx':>5} "
        f"{'warm_s':>7} {'cached_s':>8}"
    )
    print(head)
    for r in rows:

        def opt(x: float | None) -> str:
            return "-" if x is None else f"{x:.1f}"

        print(
            f"{r['lines']:>10} {r['mb']:>7.0f} {r['spark_s']:>8.1f} {r['duckdb_s']:>8.1f} "
            f"{r['bare_s']:>7.1f} {r['yard']:>6} {r['ratio']:>6.2f} {r['floor_s']:>7.1f} "
            f"{r['floor_ratio']:>6.2f} {r['read_ratio']:>5.2f} {r['goal']:>13} "
            f"{r['verdict']:>4} {r['rss_mb']:>10.0f} {r['xmx'] or '?':>5} "
            f"{opt(r['warm_s']):>7} {opt(r['cached_s']):>8}"
        )


def _child_main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "_analyze":
        out = _child_analyze(Path(argv[1]), argv[2], argv[3] == "warm")
    elif mode == "_bare_spark":
        out = _child_bare_spark(argv[1])
    elif mode == "_floor":
        out = _child_floor(Path(argv[1]), argv[2], argv[3] == "parse")
    elif mode == "_verdict":
        out = _child_verdict(Path(argv[1]), argv[2])
    elif mode == "_verdict_early":
        out = _child_verdict_early(Path(argv[1]), argv[2], float(argv[3]))
    elif mode == "_duckdb":
        out = duckdb_checks(Path(argv[1]))
    else:
        raise SystemExit(f"unknown child mode {mode}")
    print("BENCH_JSON " + json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        _child_main(sys.argv[1:])
    else:
        sys.exit(main())
