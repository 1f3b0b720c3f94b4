"""`kafka-trial shrink RUN_DIR`: the smallest schedule that still shows a failing
run's forbidden anomaly, found by running candidates on one warm cluster.

The search is harness/shrink_search.py's. Here each candidate becomes a spec (the
source run's, with the candidate's written steps, fault phase and roles) and is run
up to `repeats` times: it fails as soon as one repeat shows a sought anomaly. A
repeat is judged on a background thread while the next one runs, and the next is
not started once a judged one failed. shrink.json is written after every candidate
and shrunk.yaml whenever a smaller schedule fails, so Ctrl-C keeps the best so far.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml
from kafka_trial.checkers.results import Results
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.history import read_history
from kafka_trial.contracts.log import status, status_muted
from kafka_trial.contracts.schedule import read_schedule
from kafka_trial.contracts.shrink_record import (
    SHRUNK_CONFIG,
    Repeat,
    ShrinkRecord,
    Tried,
)
from kafka_trial.contracts.spec.run import RunSpec
from kafka_trial.harness.shrink_search import Candidate, Search, episodes, size
from kafka_trial.harness.spec import read_saved_spec

RunOne = Callable[[RunSpec, Path], None]
JudgeOne = Callable[[Path], Results]


@dataclass(frozen=True)
class Source:
    """The failing run: its spec, its schedule as episodes, and what it showed."""

    run_dir: Path
    spec: RunSpec
    candidate: Candidate
    anomalies: tuple[str, ...]
    roles: tuple[str, ...]  # the roles faults may pick from, those the run hit first


def load_source(run_dir: Path, anomaly: str | None) -> Source:
    """The run to shrink, refused with one line unless it is INVALID and has a
    schedule with at least one fault."""
    spec = read_saved_spec(run_dir)
    results_file = run_dir / "results.json"
    if not results_file.is_file():
        raise TrialError(
            f"{run_dir} has no verdict yet", f"judge it first: kafka-trial analyze {run_dir}"
        )
    results = Results.from_json(results_file)
    if anomaly is not None:
        if not results.count(anomaly):
            seen = ", ".join(results.seen()) or "none"
            raise TrialError(
                f"{run_dir} shows no {anomaly} (it shows: {seen})",
                "pass --anomaly with one of the anomalies the run shows",
            )
        sought: tuple[str, ...] = (anomaly,)
    elif results.valid is not False or not results.forbidden_seen:
        raise TrialError(
            f"{run_dir}'s verdict is {results.word}: nothing forbidden to shrink towards",
            "shrink an INVALID run, or name an anomaly it shows with --anomaly",
        )
    else:
        sought = tuple(results.forbidden_seen)
    eps = tuple(episodes(read_schedule(run_dir)))
    if not eps:
        raise TrialError(
            f"{run_dir}'s schedule has no fault step",
            "a run without faults has nothing to shrink; repeat it with --until-fail",
        )
    source = Candidate("source", eps, spec.duration_s, None)
    return Source(run_dir, spec, source, sought, _roles_hit(run_dir, spec))


def _roles_hit(run_dir: Path, spec: RunSpec) -> tuple[str, ...]:
    """The spec's roles, those the run's fault ops record hitting first: the likeliest
    simpler target is one the failing run used."""
    hit: list[str] = []
    history = run_dir / "history.jsonl"
    if history.is_file():
        for op in read_history(history).ops:
            role = op.value.get("target") if isinstance(op.value, dict) else None
            ours = op.process == "nemesis" and op.type == "ok"
            if ours and role in spec.nemesis.targets and role not in hit:
                hit.append(role)
    return (*hit, *(r for r in spec.nemesis.targets if r not in hit))


def candidate_spec(source: Source, c: Candidate) -> RunSpec:
    """The source run's spec, playing `c`: its steps written out, only the packages
    they name, its fault phase and its roles."""
    used = {s.package for s in c.steps}
    nem = source.spec.nemesis.model_copy(
        update={
            "faults": tuple(f for f in source.spec.nemesis.faults if f in used),
            "steps": tuple(c.steps),
            "targets": c.targets or source.spec.nemesis.targets,
        }
    )
    data = json.loads(source.spec.model_dump_json())
    data["nemesis"] = json.loads(nem.model_dump_json())
    data["duration_s"] = c.duration_s
    data["name"] = f"{source.spec.name}-shrunk"
    return RunSpec.model_validate(data)


@dataclass
class Shrinker:
    """Runs candidates for the search and keeps shrink.json and shrunk.yaml current."""

    source: Source
    out: Path
    repeats: int
    run_one: RunOne
    judge_one: JudgeOne
    tried: list[Tried] = field(default_factory=list)
    _pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="shrink-judge")
    )
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def trial(self, c: Candidate) -> bool:
        number = len(self.tried) + 1
        spec = candidate_spec(self.source, c)
        futures: list[Future[Repeat]] = []
        for r in range(self.repeats):
            if len(futures) >= 2:
                # At most one run ahead of the verdicts: the one judged meanwhile.
                futures[-2].result()
            if any(f.done() and _shows(f.result()) for f in futures):
                break
            status(
                f"shrink: candidate {number} ({c.stage}: {len(c.episodes)} fault steps, "
                f"{c.duration_s:g} s), run {r + 1}/{self.repeats}; best so far "
                f"{len(self._best_candidate().episodes)} fault steps"
            )
            run_dir = self.out / "runs" / f"c{number:03d}-r{r + 1}"
            futures.append(self._pool.submit(self._judged, run_dir, self._ran(spec, run_dir)))
        reps = tuple(f.result() for f in futures)
        tried = Tried(
            number,
            c.stage,
            tuple(c.steps),
            c.duration_s,
            c.targets,
            reps,
            any(_shows(r) for r in reps),
        )
        self.tried.append(tried)
        if self.best is tried:
            self._write_config()
        self.save("running")
        return tried.failed

    def _ran(self, spec: RunSpec, run_dir: Path) -> str | None:
        """Runs one repeat; the error that ended it, if one did (it has no verdict)."""
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        try:
            self.run_one(spec, run_dir)
        except TrialError as e:
            return str(e)
        except Exception as e:
            # A search is many runs long: one that broke (a cluster that would not come
            # up, a lost engine) is a repeat without a verdict, recorded with its error,
            # not the end of what the others found. Ctrl-C is no Exception: it stops.
            return f"{type(e).__name__}: {e}"[:500]
        return None

    def _judged(self, run_dir: Path, error: str | None) -> Repeat:
        if error is not None:
            return Repeat(str(run_dir), "ERROR", {}, error)
        with status_muted():
            try:
                results = self.judge_one(run_dir)
            except TrialError as e:
                return Repeat(str(run_dir), "ERROR", {}, str(e))
        shown = {a: results.count(a) or 0 for a in self.source.anomalies}
        return Repeat(str(run_dir), results.word, shown)

    @property
    def best(self) -> Tried | None:
        """The smallest failing candidate, the first tried among equals: the order
        the search's own `best` follows (shrink_search.size)."""
        failed = (t for t in self.tried if t.failed)
        return min(failed, key=lambda t: size(len(t.steps), t.duration_s, t.targets), default=None)

    def _best_candidate(self) -> Candidate:
        if self.best is None:
            return self.source.candidate
        return Candidate("best", episodes(self.best.steps), self.best.duration_s, None)

    def _write_config(self) -> None:
        assert self.best is not None
        c = Candidate("best", episodes(self.best.steps), self.best.duration_s, self.best.targets)
        data = json.loads(candidate_spec(self.source, c).model_dump_json())
        text = yaml.safe_dump(data, sort_keys=False)
        (self.out / SHRUNK_CONFIG).write_text(
            f"# The smallest schedule found that showed {', '.join(self.source.anomalies)}"
            f"\n# in {self.source.run_dir}; replay: kafka-trial run --config {SHRUNK_CONFIG}"
            f"\n{text}"
        )

    def record(self, state: str) -> ShrinkRecord:
        best = self.best
        src = self.source.candidate
        return ShrinkRecord(
            source_run=str(self.source.run_dir),
            anomalies=self.source.anomalies,
            repeats=self.repeats,
            state=state,  # type: ignore[arg-type]
            tried=tuple(self.tried),
            best=best.number if best else 0,
            best_steps=best.steps if best else tuple(src.steps),
            best_duration_s=best.duration_s if best else src.duration_s,
            best_targets=best.targets if best else None,
        )

    def save(self, state: str) -> ShrinkRecord:
        rec = self.record(state)
        rec.write(self.out)
        return rec

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _shows(r: Repeat) -> bool:
    return any(n > 0 for n in r.shown.values())


def shrink(
    source: Source, out: Path, repeats: int, run_one: RunOne, judge_one: JudgeOne
) -> ShrinkRecord:
    """The whole search; on Ctrl-C, what it found so far (state `interrupted`)."""
    out.mkdir(parents=True, exist_ok=True)
    sh = Shrinker(source, out, repeats, run_one, judge_one)
    sh.save("running")
    search = Search(source.candidate, sh.trial, source.spec.nemesis.quiet_s)
    search.best = replace(source.candidate)
    try:
        search.run(source.roles)
    except KeyboardInterrupt:
        return sh.save("interrupted")
    finally:
        sh.close()
        status(None)
    return sh.save("done")
