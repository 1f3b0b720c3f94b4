"""What the checks found that the history cannot decide, and why (the verdict's
`problems` and each anomaly's `undecided`).

Absence proves something only where the history proves someone looked. So:
- a value no read returned is `unseen`, never a loss, unless the drain or a read got
  past it (then it is a lost-write); each unseen finding names the partitions the
  drain did not finish and why, as far as the history tells;
- while lines inside the history are damaged, a finding that rests on absence may be
  cleared by the damaged line, so it is undecided (one that rests on presence stands);
- damaged lines inside the history (a cut-off last line is the run's end, not
  damage) leave the verdict unknown: results cover only the lines that parse;
- a run cut off before its final drain, or a history that tested nothing, has no
  verdict;
- with an application on trial: output records that carry no recognisable id, and
  inputs no output carries that lie at or above the app group's committed offsets
  (the app did not catch up, or never consumed), keep the verdict unknown; an
  app-output-lost finding is undecided while the output drain did not read every
  output partition to its end;
- an end a drain found held below the partition's high watermark (an open
  transaction keeps read_committed readers from what lies past it) is no end: the
  partition is unfinished, and named with that reason.
"""

from __future__ import annotations

from typing import Any

from kafka_trial.checkers import verdict
from kafka_trial.checkers.anomalies import ABSENCE
from kafka_trial.spark_analysis.checks.value_pass import value_frame
from kafka_trial.spark_analysis.facts.app_output import app_offsets, missing_inputs
from kafka_trial.spark_analysis.facts.derived import drain_frontier
from kafka_trial.spark_analysis.facts.shared_frames import TP, AnalysisFrames, analysis
from kafka_trial.spark_analysis.read.history_frames import Frames
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

NO_DRAIN = "the final drain never ran"
# Unfinished partitions named in a finding; more are counted.
NAMED = 8


def damaged_inside(fr: Frames, tail: str) -> int:
    """`tail` "cut": the last line was cut off, as read.tail.cut_line settled it."""
    return verdict.damaged_inside(fr.damaged, tail == "cut")


def damaged_problems(fr: Frames, tail: str, cut: str) -> list[str]:
    """The verdict policy's problem for the damaged lines, with a few of them (never
    the cut-off last line, `cut`)."""
    examples = [(i, ln) for i, ln in fr.damaged_examples if not cut or ln != cut[: len(ln)]]
    return verdict.damaged_problems(damaged_inside(fr, tail), examples)


def undecided_findings(
    fr: Frames,
    anomalies: dict[str, dict[str, Any]],
    st: dict[str, Any],
    damaged_inside: int,
    allowed: tuple[str, ...],
) -> list[str]:
    """Marks the findings the history cannot decide (`undecided`) and returns the
    problems that keep the whole history from deciding the verdict."""
    problems: list[str] = []
    tested = st["sends_attempted"] > 0 or st["records_read"] > 0
    if st["client_ops"] == 0:
        # Nothing was sent or read: no anomaly is no evidence either.
        problems.append("no client operations in the history: nothing was tested")
    elif not tested:
        problems.append(
            f"no value sent and no record read in the history (its {st['client_ops']} "
            "client ops are group events and empty polls): nothing was tested"
        )
    elif not fr.drain_ran:
        problems.append(
            f"{NO_DRAIN} (the run was cut off before it): values nobody read are unseen, "
            "which proves nothing, and a record read and then lost cannot be found; rerun, "
            "or `kafka-trial finish` the run while its cluster is up"
        )
    if anomalies["unseen"].get("count"):
        why = drain_shortfall(fr)
        anomalies["unseen"]["undecided"] = why
        if fr.drain_ran and "unseen" not in allowed:
            problems.append(
                f"{anomalies['unseen']['count']} value(s) that must have committed were never"
                f" read where nothing proves them gone ({why}): late and lost look the same"
            )
    if fr.app_present:
        problems += app_problems(fr, anomalies, allowed)
    if damaged_inside > 0:
        for name in ABSENCE:
            found = anomalies.get(name, {})
            if found.get("count") and not found.get("undecided"):
                found["undecided"] = (
                    f"{damaged_inside} damaged line(s) inside the history may hold the "
                    "read, send or event whose absence this rests on"
                )
    return problems


def app_problems(
    fr: Frames, anomalies: dict[str, dict[str, Any]], allowed: tuple[str, ...]
) -> list[str]:
    """What the history cannot decide about the application on trial (see the module's
    docstring); marks app-output-lost undecided where the output was not drained."""
    with analysis(fr) as plan:
        problems = [p for p in (_no_id(plan), _behind(plan, allowed)) if p]
        lost = anomalies.get("app-output-lost", {})
        if lost.get("count") and not lost.get("undecided"):
            short = _output_shortfall(plan)
            if short:
                lost["undecided"] = short
    return problems


def _no_id(fr: AnalysisFrames) -> str | None:
    nulls = fr.app_output.filter(F.col("value").isNull())
    row = nulls.agg(
        F.count("*").alias("n"), F.min(F.struct(*TP, "offset")).alias("first")
    ).collect()[0]
    if not row["n"]:
        return None
    first = row["first"]
    return (
        f"{row['n']} app output record(s) carry no recognisable id (first: "
        f"{first['topic']}/{first['partition']}@{first['offset']}); set app.id_json or "
        "app.id_regex"
    )


def _behind(fr: AnalysisFrames, allowed: tuple[str, ...]) -> str | None:
    """Inputs no output carries that the app group did not commit past: late and lost
    look the same. Where the guarantee allows a loss it decides nothing, unless the
    group committed no offset at all (the app never consumed)."""
    never = not app_offsets(fr).limit(1).collect()
    if "app-output-lost" in allowed and not never:
        return None
    missing = missing_inputs(fr)
    # A value sent more than once is behind only if no copy lies below the offset.
    behind = missing.join(missing.filter(F.col("below")).select("value"), "value", "left_anti")
    rows = (
        behind.groupBy(*TP)
        .agg(
            F.countDistinct("value").alias("values"),
            F.min("offset").alias("first"),
            F.max("committed").alias("committed"),
        )
        .orderBy(*TP)
        .collect()
    )
    if not rows:
        return None
    n = behind.select("value").distinct().count()
    named = [
        f"{r['topic']}/{r['partition']}: {r['values']} from offset {r['first']}, "
        + (f"committed {r['committed']}" if r["committed"] is not None else "none committed")
        for r in rows[:NAMED]
    ]
    if len(rows) > NAMED:
        named.append(f"and {len(rows) - NAMED} more partition(s)")
    why = "never consumed" if never else "did not catch up"
    return (
        f"{n} input value(s) that must have committed are in no app output record and lie "
        f"at or above the app group's committed offsets ({'; '.join(named)}): the app "
        f"{why}, so late and lost look the same"
    )


def _output_shortfall(fr: AnalysisFrames) -> str | None:
    """Why the output drain is not proven to have read the whole output: it never ran,
    or output partitions it did not read to their end; None if it did."""
    if not fr.app_output_polls:
        return "the app's output was never drained: nothing proves the outputs absent"
    held = _held(fr, "app-output")
    # A partition found only held (an open transaction from its first offset on) has
    # neither records nor an end, and is as unread as one the drain stopped inside.
    seen = (
        fr.app_output.select(*TP)
        .union(fr.app_output_ends.select(*TP))
        .union(held.select(*TP))
        .distinct()
    )
    short = (
        seen.join(fr.app_output_ends, TP, "left_anti").join(held, TP, "left").orderBy(*TP).collect()
    )
    if not short:
        return None
    named = [
        f"{r['topic']}/{r['partition']}" + (f" ({_held_reason(r)})" if r["held"] else "")
        for r in short[:NAMED]
    ]
    if len(short) > NAMED:
        named.append(f"and {len(short) - NAMED} more")
    return (
        f"the output drain did not read {', '.join(named)} to its end: the missing outputs "
        "may sit past where it stopped"
    )


def drain_shortfall(fr: Frames) -> str:
    """Why values no read returned are not proven gone: the partitions holding them
    that the final drain did not finish, each with what the history says about why."""
    if not fr.drain_ran:
        return NO_DRAIN
    with analysis(fr) as plan:
        # Given the checks' own analysis, the unseen rows are the value pass's, kept.
        reach = drain_frontier(plan)
        unseen = value_frame(plan, ("unseen",)).select(
            F.from_json("detail", "topic string, partition long").alias("at")
        )
        rows = (
            unseen.select("at.*")
            .groupBy(*TP)
            .agg(F.count("*").alias("values"))
            .join(reach, TP, "left")
            .join(_held(plan, "drain"), TP, "left")
            .orderBy(*TP)
            .collect()
        )
    named = [f"{_where(r)} ({_reason(r)})" for r in rows[:NAMED]]
    if len(rows) > NAMED:
        named.append(f"and {len(rows) - NAMED} more partition(s)")
    text = "the final drain did not finish " + ", ".join(named)
    health = _last_health(fr)
    if health is not None and health != "ok":
        text += f"; the cluster was not healthy before the drain (await-healthy ended {health})"
    return text


def _where(r: Any) -> str:
    if r["partition"] is None:
        return f"{r['topic']} (partition unknown)"
    return f"{r['topic']}/{r['partition']}"


def _held(fr: Frames, role: str) -> DataFrame:
    """topic, partition, held, high_watermark: the partitions `role`'s drain last
    found held below the high watermark."""
    return (
        fr.held_ends.filter(F.col("role") == role)
        .select(*TP, "high_watermark")
        .withColumn("held", F.lit(True))
    )


def _held_reason(r: Any) -> str:
    high = r["high_watermark"]
    below = f"the high watermark {high}" if high is not None else "its high watermark"
    return (
        f"held: its read_committed end stayed below {below}, an open transaction holding "
        "back what lies past it, until the drain stopped"
    )


def _reason(r: Any) -> str:
    if r["partition"] is None:
        return "no offset or partition known"
    if r["held"]:
        return _held_reason(r)
    if r["drain_max_offset"] is None and r["drain_end"] is None:
        return "no record returned"
    return "time limit: the drain stopped before the value's offset and the partition's end"


def _last_health(fr: Frames) -> str | None:
    """How the last wait for a healthy cluster ended, before the drain."""
    done = (
        fr.ops.filter(
            (F.col("process") == "nemesis")
            & (F.col("f") == "await-healthy")
            & (F.col("type") != "invoke")
        )
        .orderBy(F.col("index").desc())
        .limit(1)
        .collect()
    )
    return done[0]["type"] if done else None
