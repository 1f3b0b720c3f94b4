"""A campaign: a matrix of runs (presets or config files x nemesis packages x seeds x
Kafka versions), one after another, each judged and reported, with one summary.

CAMPAIGN_DIR/
  campaign.json       the matrix and every run's outcome, rewritten after each run
  index.html          links to every run's report.html
  <run key>/          one run directory per matrix entry (history, results, report)

Runs that finished keep their results when the campaign is interrupted;
`kafka-trial campaign --resume DIR` runs what is missing.

A run takes the cluster the run before it left warm when their broker side is the
same (harness/warm_cluster.py), so runs are grouped by broker side: a Kafka version
or broker config change costs one restart, not one per run.
"""

from __future__ import annotations

import itertools
import json
import queue
import shutil
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kafka_trial.checkers.results import Results
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import activity, status_muted
from kafka_trial.contracts.run_record import RunRecord
from kafka_trial.contracts.settings import Frozen
from kafka_trial.harness.presets import preset
from kafka_trial.harness.runner import run, signals_deferred, signals_interrupt
from kafka_trial.harness.spec import RunSpec, build_spec, merge_config
from kafka_trial.harness.until_fail import STOPS, Attempt, Hunt, hunt_code
from kafka_trial.harness.warm_cluster import WarmCluster, broker_side
from kafka_trial.report.campaign import (
    CAMPAIGN_FILE,
    CampaignRun,
    CampaignState,
    savings_line,
    summary_table,
    write_index,
)
from kafka_trial.report.judge import judge
from kafka_trial.report.junit import write_junit
from kafka_trial.spark_analysis.spark.session import spark_session
from pydantic import Field, ValidationError


class CampaignSpec(Frozen):
    name: str = Field("campaign", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    presets: tuple[str, ...] = ()
    configs: tuple[str, ...] = Field((), description="run config files (relative to this file)")
    nemesis: tuple[str, ...] = Field(
        (), description="fault package lists, each comma-separated; empty: each run's own"
    )
    seeds: int | tuple[int, ...] = Field(
        1, description="a count (0..N-1, N >= 1) or a list of seeds"
    )
    kafka_versions: tuple[str, ...] = Field((), description="empty: each run's own")
    duration_s: float | None = Field(None, gt=0, description="every run's fault phase")
    overrides: dict[str, Any] = Field(default_factory=dict, description="applied to every run")
    reuse_clusters: bool = Field(
        True, description="keep a healthy cluster warm for the next run with the same broker side"
    )
    overlap_analysis: bool = Field(
        True, description="judge each run on a background thread while the next one runs"
    )
    until_fail: int | None = Field(
        None,
        ge=1,
        description="hunt a rare failure: repeat the matrix up to N rounds, each with new "
        "seeds, until a run is invalid (or cannot run); each run is judged before the next",
    )

    def seed_list(self, round_: int = 0) -> list[int]:
        """The seeds of a round: round 0's as given, each later round's shifted past the
        round before it (seeds [0, 2] go on [3, 5], [6, 8]), so no seed runs twice."""
        seeds = list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)
        if not seeds:
            return seeds
        stride = max(seeds) - min(seeds) + 1
        return [s + round_ * stride for s in seeds]

    @property
    def rounds(self) -> int:
        return self.until_fail or 1

    def matrix_size(self) -> int:
        """Runs in one round of the matrix."""
        sources = len(self.presets) + len(self.configs)
        return (
            sources
            * len(self.nemesis or [""])
            * len(self.seed_list())
            * len(self.kafka_versions or [""])
        )


@dataclass(frozen=True)
class Entry:
    key: str  # the run directory's name in the campaign directory
    config: dict[str, Any]
    source: str = ""  # the preset or config file it came from


def config_path(source: str, origin: Path | None) -> Path:
    p = Path(source)
    return p if p.is_absolute() or origin is None else origin.parent / p


def _base(source: str, origin: Path | None) -> tuple[str, dict[str, Any]]:
    """(label, config) of a preset name or a config file."""
    if source.endswith((".yaml", ".yml", ".json")):
        p = config_path(source, origin)
        if not p.is_file():
            raise TrialError(f"campaign config file {p} does not exist", "fix its path")
        data = yaml.safe_load(p.read_text()) or {}
        if not isinstance(data, dict):
            raise TrialError(f"config file {p} must hold a mapping", "write key: value pairs")
        return p.stem, data
    return source, dict(preset(source))


def entries(spec: CampaignSpec, origin: Path | None = None, round_: int = 0) -> list[Entry]:
    """The matrix, in order (with --until-fail, the matrix of that round's seeds);
    every entry's config is validated before anything runs."""
    sources = [*spec.presets, *spec.configs]
    if not sources:
        raise TrialError("the campaign names no presets or configs", "add presets: or configs:")
    out: list[Entry] = []
    faults: list[str | None] = list(spec.nemesis) or [None]
    versions: list[str | None] = list(spec.kafka_versions) or [None]
    problems: list[str] = []
    for source, nem, seed, version in itertools.product(
        sources, faults, spec.seed_list(round_), versions
    ):
        label, base = _base(source, origin)
        over: dict[str, Any] = {"seed": seed}
        if spec.duration_s is not None:
            over["duration_s"] = spec.duration_s
        if version:
            over.setdefault("cluster", {})["kafka_version"] = version
        if nem is not None:
            over.setdefault("nemesis", {})["faults"] = [x for x in nem.split(",") if x]
        config = merge_config(merge_config(base, spec.overrides), over)
        parts = [label]
        if nem is not None:
            parts.append(nem.replace(",", "+") or "no-faults")
        parts.append(f"s{seed}")
        if version:
            parts.append(f"k{version}")
        key = "-".join(parts)
        try:
            build_spec(config, source=key)
        except TrialError as e:
            problems.append(e.problem)
        out.append(Entry(key, config, source))
    if problems:
        raise TrialError("; ".join(problems), "fix the campaign's runs named above")
    if not out:
        # Nothing to run is no verdict: a CI gate must not read it as a pass.
        raise TrialError(
            f"the campaign's matrix is empty (seeds: {spec.seeds!r})",
            "give --seeds 1 or more (or seeds: [0, 1] in the campaign file)",
        )
    if len({e.key for e in out}) != len(out):
        raise TrialError("the campaign lists the same run twice", "remove the duplicate")
    return _grouped_by_broker_side(out)


def _grouped_by_broker_side(matrix: list[Entry]) -> list[Entry]:
    """The matrix in order, except that runs sharing a broker side run together
    (first come, first served), so a warm cluster serves all of them in a row."""
    keys = [broker_side(build_spec(e.config, source=e.key).cluster) for e in matrix]
    first = {k: i for i, k in reversed(list(enumerate(keys)))}
    return [e for _, e in sorted(zip(keys, matrix, strict=True), key=lambda p: first[p[0]])]


def load_campaign(path: str | Path | None, over: dict[str, Any]) -> CampaignSpec:
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise TrialError(f"campaign file {p} does not exist", "pass an existing YAML file")
        try:
            data = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as e:
            raise TrialError(
                f"campaign file {p} is not valid YAML: {str(e).splitlines()[0]}", "fix its syntax"
            ) from None
    try:
        return CampaignSpec.model_validate({**data, **over})
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise TrialError(
            f"bad campaign value at {where}: {err['msg']}", f"correct {where}"
        ) from None


# ---------------------------------------------------------------- running


RunOne = Callable[[RunSpec, Path], Results | None]
# Judges a run directory that run_one filled, as analyze does.
Judge = Callable[[Path], Results]


def worst(codes: list[int]) -> int:
    """Setup problems (3) > invalid (1) > unknown (2) > valid (0), as the CI examples."""
    for c in (3, 1, 2):
        if c in codes:
            return c
    return 0


def _settings(spec: RunSpec) -> str:
    p, t = spec.producer, spec.topic
    faults = ",".join(spec.nemesis.faults) or "none"
    return (
        f"acks={p.acks} idem={str(p.idempotence).lower()} rf={t.replication_factor} "
        f"isr={t.min_insync_replicas} faults={faults}"
    )


def new_campaign_dir(runs_dir: Path, name: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    d = runs_dir / f"{stamp}-campaign-{name}"
    d.mkdir(parents=True, exist_ok=False)
    return d


@dataclass(frozen=True)
class _Outcome:
    results: Results | None
    error: BaseException | None
    seconds: float


class _Campaign:
    """One campaign's progress: the matrix, the typed record of every run, and the
    judging thread. Only this (main) thread writes campaign.json."""

    def __init__(
        self,
        spec: CampaignSpec,
        camp_dir: Path,
        origin: Path | None,
        resume: bool,
        say: Callable[[str], None],
        judge: Judge | None,
    ) -> None:
        self.spec, self.origin = spec, origin
        self.matrix = entries(spec, origin)
        self.round = 0
        self.camp_dir = camp_dir
        self.say = say
        saved = resume and (camp_dir / CAMPAIGN_FILE).is_file()
        self.state = (
            CampaignState.load(camp_dir)
            if saved
            else CampaignState(spec=spec.model_dump(mode="json"))
        )
        self.state.status = "running"
        # A hunt's later rounds, saved before an interruption, stay in the order.
        self.state.order = list(dict.fromkeys([*(e.key for e in self.matrix), *self.state.order]))
        self.save()
        self.judging = _Judging(judge) if judge is not None else None

    def save(self) -> None:
        self.state.save(self.camp_dir)

    def record(self, key: str, rec: CampaignRun, outcome: _Outcome) -> None:
        if outcome.results is not None:
            rec.judged(outcome.results)
        elif isinstance(outcome.error, TrialError):
            rec.failed("setup problem", outcome.error.one_line())
        else:
            # A bug in one run must not cost the runs after it; it still fails the
            # campaign, and its traceback went to stderr for the bug report.
            err = outcome.error
            rec.failed("error", f"{type(err).__name__}: {err}")
        rec.time_s = round((rec.run_s or 0) + outcome.seconds, 1)
        self.state.runs[key] = rec
        self.save()

    def collect(self, wait: bool) -> None:
        assert self.judging is not None
        for key, outcome in self.judging.finished(wait):
            rec = self.state.runs[key].model_copy()
            rec.judge_s = round(outcome.seconds, 1)
            self.record(key, rec, outcome)
            took = f"ran {rec.run_s or 0:.0f}s, judged {outcome.seconds:.0f}s"
            why = f": {rec.error}" if rec.error else ""
            self.say(f"    {key}: {rec.verdict} ({took}){why}")

    def _skip(self, i: int, e: Entry) -> bool:
        """A run this campaign finished before (--resume) is not run again."""
        done = self.state.runs.get(e.key)
        if done is not None and done.status == "done":
            self.say(f"[{self._at(i)}] {e.key}: done before, {done.verdict}")
            return True
        if done is not None and done.status == "ran" and self.judging is not None:
            self.say(f"[{self._at(i)}] {e.key}: ran before, judging it")
            self.judging.submit(e.key, self.camp_dir / e.key)
            return True
        return False

    def _at(self, i: int) -> str:
        at = f"{i}/{len(self.matrix)}"
        return f"round {self.round + 1}/{self.spec.rounds} {at}" if self.spec.until_fail else at

    def _hunt_over(self) -> bool:
        """A hunt ends at its first run that failed (or could not run), whenever it ran:
        a resumed hunt that had found one runs nothing more."""
        return self.spec.until_fail is not None and any(
            r.code in STOPS for r in self.state.runs.values()
        )

    def _run_round(self, run_one: RunOne) -> bool:
        """The matrix once; True when the hunt is over."""
        for i, e in enumerate(self.matrix, 1):
            if self.judging is not None:
                self.collect(wait=False)
            if self._hunt_over():
                return True
            self.run_entry(i, e, run_one)
        return self._hunt_over()

    def _next_round(self) -> None:
        self.round += 1
        self.matrix = entries(self.spec, self.origin, self.round)
        self.state.order += [e.key for e in self.matrix if e.key not in self.state.order]
        self.save()

    def _exit_code(self) -> int:
        if self.spec.until_fail is None:
            return worst([r.code for r in self.state.runs.values() if r.code is not None])
        runs = [self.state.runs[k] for k in self.state.order if k in self.state.runs]
        return hunt_code([r.code for r in runs if r.code is not None])

    def _fresh_dir(self, key: str) -> Path:
        run_dir = self.camp_dir / key
        if run_dir.exists():
            # An interrupted attempt: keep its history beside the new one.
            n = sum(1 for _ in self.camp_dir.glob(f"{key}.interrupted-*"))
            shutil.move(str(run_dir), str(self.camp_dir / f"{key}.interrupted-{n + 1}"))
        run_dir.mkdir()
        return run_dir

    def run_entry(self, i: int, e: Entry, run_one: RunOne) -> None:
        if self._skip(i, e):
            return
        run_dir = self._fresh_dir(e.key)
        run_spec = build_spec(e.config, source=e.key)
        self.say(f"[{self._at(i)}] {e.key}: {_settings(run_spec)}")
        t0 = time.monotonic()
        rec = CampaignRun(
            run_dir=e.key, settings=_settings(run_spec), name=run_spec.name, source=e.source
        )
        self.state.runs[e.key] = rec
        self.save()
        try:
            results = run_one(run_spec, run_dir)
        except KeyboardInterrupt:
            rec.status, rec.time_s = "interrupted", round(time.monotonic() - t0, 1)
            self.state.status = "interrupted"
            self.save()
            raise
        except Exception as err:
            if not isinstance(err, TrialError):
                traceback.print_exc()
            rec.run_s = round(time.monotonic() - t0, 1)
            self.record(e.key, rec, _Outcome(None, err, 0.0))
            # The reason on the terminal, not only in campaign.json: a CI log shows it.
            self.say(f"    {rec.verdict} in {rec.time_s:.0f}s: {rec.error}")
            return
        rec.run_s = round(time.monotonic() - t0, 1)
        rec.warm_cluster, rec.cluster_ready_s = _cluster_use(run_dir)
        if self.judging is None:
            self.record(e.key, rec, _Outcome(results, None, 0.0))
            self.say(f"    {rec.verdict} in {rec.time_s:.0f}s")
            return
        rec.status = "ran"
        self.save()
        self.judging.submit(e.key, run_dir)

    def run(self, run_one: RunOne) -> CampaignState:
        try:
            while not self._run_round(run_one) and self.round + 1 < self.spec.rounds:
                self._next_round()
            while self.judging is not None and self.judging.pending:
                self.collect(wait=True)
        except KeyboardInterrupt:
            if self.judging is not None:
                self.collect(wait=False)  # what was judged by now is kept
            self.state.status = "interrupted"
            self.save()
            raise
        finally:
            if self.judging is not None:
                self.judging.stop()
        self.state.status = "done"
        self.state.clusters = cluster_savings(self.state)
        self.state.exit_code = self._exit_code()
        self.save()
        return self.state


def run_campaign(
    spec: CampaignSpec,
    camp_dir: Path,
    run_one: RunOne,
    origin: Path | None = None,
    resume: bool = False,
    say: Callable[[str], None] = print,
    judge: Judge | None = None,
) -> CampaignState:
    """Run every entry not already done; campaign.json after each. Returns the state.

    With `judge`, `run_one` only runs (its return value is ignored) and each finished
    run is judged on a background thread while the next one runs. Both use the CPU
    (on 2 cores a fault phase's brokers and clients keep it busy), so the overlap
    saves what the CPU has to spare, not the whole judging time.

    A KeyboardInterrupt (Ctrl-C, SIGTERM) ends the campaign after the run in progress
    has healed and cleaned up; the state then says `interrupted`. A run that ended but
    was not judged yet stays `ran`, and --resume judges it without running it again."""
    return _Campaign(spec, camp_dir, origin, resume, say, judge).run(run_one)


class _Judging:
    """One background thread that judges finished runs in the order they ended.

    A daemon thread: Ctrl-C must not wait for a Spark job; a run it was judging stays
    `ran` in campaign.json, which only the main thread writes."""

    def __init__(self, judge: Judge) -> None:
        self._judge = judge
        self._todo: queue.Queue[tuple[str, Path] | None] = queue.Queue()
        self._done: queue.Queue[tuple[str, _Outcome]] = queue.Queue()
        self.pending = 0
        self._thread = threading.Thread(target=self._loop, name="campaign-judge", daemon=True)
        self._thread.start()

    def submit(self, key: str, run_dir: Path) -> None:
        self.pending += 1
        self._todo.put((key, run_dir))

    def finished(self, wait: bool) -> list[tuple[str, _Outcome]]:
        out: list[tuple[str, _Outcome]] = []
        if wait and self.pending:
            out.append(self._done.get())
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                break
        self.pending -= len(out)
        return out

    def stop(self) -> None:
        self._todo.put(None)

    def _loop(self) -> None:
        # The run going on in the main thread owns the status line.
        with status_muted():
            while (item := self._todo.get()) is not None:
                key, run_dir = item
                t0 = time.monotonic()
                results, error = None, None
                try:
                    results = self._judge(run_dir)
                except Exception as err:
                    if not isinstance(err, TrialError):
                        traceback.print_exc()
                    error = err
                self._done.put((key, _Outcome(results, error, time.monotonic() - t0)))


def _cluster_use(run_dir: Path) -> tuple[bool | None, float | None]:
    """Whether the run had a warm cluster, and what getting it ready cost."""
    try:
        record = RunRecord.read(run_dir)
    except TrialError:
        return None, None
    return record.warm_cluster, record.phases.get("cluster_ready")


def cluster_savings(state: CampaignState) -> dict[str, Any]:
    """How many runs had a warm cluster, and the set-up time they saved: a warm run's
    readiness (its topics in sync) against the mean of the cold starts in this campaign."""
    runs = [r for r in state.runs.values() if r.cluster_ready_s is not None]
    cold = [r.cluster_ready_s for r in runs if not r.warm_cluster]
    warm = [r.cluster_ready_s for r in runs if r.warm_cluster]
    out: dict[str, Any] = {"runs": len(runs), "started": len(cold), "warm": len(warm)}
    if cold and warm:
        mean_cold = sum(cold) / len(cold)  # type: ignore[arg-type]
        out["mean_cold_ready_s"] = round(mean_cold, 1)
        out["mean_warm_ready_s"] = round(sum(warm) / len(warm), 1)  # type: ignore[arg-type]
        out["saved_s"] = round(sum(mean_cold - w for w in warm), 1)  # type: ignore[operator]
    return out


# ---------------------------------------------------------------- the command


def execute(
    spec: CampaignSpec,
    camp_dir: Path,
    resume: bool = False,
    spark_master: str | None = None,
    junitxml: Path | None = None,
) -> int:
    """`kafka-trial campaign`: warm Spark and a warm cluster, run the matrix, judge
    every run, print the table and write the index (and JUnit). Returns the exit code.

    A hunt (--until-fail) judges each run before the next starts: it stops at the
    failing run, not one run later."""
    overlap = spec.overlap_analysis and spec.until_fail is None
    if overlap:
        # Started here, not by the judging thread: while the JVM starts, the whole
        # process's stderr points at a log to keep the launcher's banner off the
        # terminal, and the run going on meanwhile would lose its lines to it.
        with activity("analysis: starting Spark"):
            spark_session(spark_master or "local[*]")
    warm = WarmCluster() if spec.reuse_clusters else None

    def judge_one(run_dir: Path) -> Results:
        judged = judge(run_dir, spark_master=spark_master, say=None)
        assert judged.results is not None
        return judged.results

    def run_one(run_spec: RunSpec, run_dir: Path) -> Results | None:
        run(run_spec, run_dir, warm)
        return None if overlap else judge_one(run_dir)

    try:
        with signals_interrupt():
            state = run_campaign(
                spec, camp_dir, run_one, resume=resume, judge=judge_one if overlap else None
            )
    except KeyboardInterrupt:
        state = CampaignState.load(camp_dir)
        write_index(camp_dir, state)
        print(summary_table(state))
        _print_hunt(spec, camp_dir, state, interrupted=True)
        print(
            f"kafka-trial: campaign interrupted; finished runs are kept -- fix: "
            f"kafka-trial campaign --resume {camp_dir}",
            file=sys.stderr,
        )
        return 130
    finally:
        if warm is not None:
            with signals_deferred():
                warm.close()
    _print_outcome(camp_dir, state, junitxml)
    _print_hunt(spec, camp_dir, state)
    return int(state.exit_code or 0)


def hunt_of(
    spec: CampaignSpec, camp_dir: Path, state: CampaignState, interrupted: bool = False
) -> Hunt:
    """A campaign's hunt as --until-fail's account of it: its runs in the order they
    ran, each named by its key and seed."""
    attempts = []
    for key in state.order:
        rec = state.runs.get(key)
        if rec is None or rec.code is None:
            continue
        seed = _seed_of(camp_dir / key)
        attempts.append(Attempt(seed, camp_dir / key, rec.code, rec.error or "", key))
    return Hunt(spec.rounds * spec.matrix_size(), tuple(attempts), interrupted)


def _seed_of(run_dir: Path) -> int:
    """The run's seed, as its spec.json says (a replay runs that one)."""
    try:
        return int(json.loads((run_dir / "spec.json").read_text())["seed"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1


def _print_hunt(
    spec: CampaignSpec, camp_dir: Path, state: CampaignState, interrupted: bool = False
) -> None:
    if spec.until_fail is None:
        return
    for line in hunt_of(spec, camp_dir, state, interrupted).summary():
        print(line)


def _print_outcome(camp_dir: Path, state: CampaignState, junitxml: Path | None) -> None:
    print(summary_table(state))
    if line := savings_line(state.clusters):
        print(line)
    print(f"index: {write_index(camp_dir, state)}")
    if junitxml is not None:
        suites = [
            (key, Results.from_json(camp_dir / key / "results.json"))
            for key in state.order
            if (camp_dir / key / "results.json").is_file()
        ]
        print(f"junit: {write_junit(junitxml, suites)}")
