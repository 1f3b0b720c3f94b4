"""`--until-fail N`: hunt a rare failure by running again with new seeds until a run
fails or N runs are done.

`kafka-trial run --until-fail N` runs seeds SEED, SEED+1, ..., SEED+N-1 (SEED from
--seed, 0 by default) on one warm cluster, judging each run before the next starts so
that the hunt stops at the failing run itself. `kafka-trial campaign --until-fail N`
repeats its whole matrix up to N rounds, each with seeds no earlier round had
(harness/campaign.py), so every entry gets the same share of the hunt.

A run stops the hunt when it is INVALID (a forbidden anomaly: what was hunted) or
could not run at all (a setup problem or an error: every later run would meet it
too). An `unknown` run (the check could not decide, or the run could not finish)
neither stops the hunt nor counts as a pass; it is listed, and it makes the exit
code 2 if nothing failed. The exit code is the stopping run's, else 2 if any run was
unknown, else 0: all N passed.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafka_trial.contracts.errors import TrialError
from kafka_trial.harness.runner import new_run_dir, run, signals_deferred, signals_interrupt
from kafka_trial.harness.spec import RunSpec
from kafka_trial.harness.warm_cluster import WarmCluster

# Exit codes that end a hunt: invalid, and a run that could not run.
STOPS = (1, 3)
VERDICTS = {0: "valid", 1: "INVALID", 2: "unknown", 3: "setup problem"}


@dataclass(frozen=True)
class Attempt:
    """One run of the hunt, and its verdict as an exit code."""

    seed: int
    run_dir: Path
    code: int
    error: str = ""  # why a run that could not run did not
    key: str = ""  # a campaign's run key: its seed alone does not name a run there

    @property
    def verdict(self) -> str:
        return VERDICTS.get(self.code, f"exit {self.code}")

    @property
    def name(self) -> str:
        return f"{self.key} (seed {self.seed})" if self.key else f"seed {self.seed}"


def hunt_code(codes: list[int]) -> int:
    """The exit code of a hunt whose runs ended with `codes`, in the order they ran."""
    stopped = [c for c in codes if c in STOPS]
    if stopped:
        return stopped[0]
    return 2 if 2 in codes else 0


def reproduce(run_dir: Path) -> str:
    """The command that runs a run again, its faults included (spec.json holds its seed
    and every setting the schedule is drawn from)."""
    return f"kafka-trial run --config {run_dir / 'spec.json'}"


def check_limit(n: int) -> None:
    if n < 1:
        raise TrialError(
            f"--until-fail {n} asks for no runs", "give --until-fail 1 or more (the most runs)"
        )


@dataclass(frozen=True)
class Hunt:
    """What a hunt ran, in order, and whether Ctrl-C or SIGTERM ended it."""

    limit: int
    attempts: tuple[Attempt, ...]
    interrupted: bool = False

    @property
    def stopped_by(self) -> Attempt | None:
        return next((a for a in self.attempts if a.code in STOPS), None)

    @property
    def exit_code(self) -> int:
        if self.stopped_by is None and self.interrupted:
            return 130
        return hunt_code([a.code for a in self.attempts])

    def summary(self) -> list[str]:
        """The lines a user acts on: the failing seed, its directory and how to run it
        again; or how many of the N runs passed, and which were unknown."""
        passed = sum(a.code == 0 for a in self.attempts)
        unknown = [a for a in self.attempts if a.code == 2]
        head = f"until-fail: {len(self.attempts)} of at most {self.limit} runs, {passed} valid"
        if unknown:
            head += f", {len(unknown)} unknown (neither a pass nor a failure)"
        lines = [head]
        for a in unknown:
            lines.append(f"  unknown: {a.name}: {a.run_dir}")
        failed = self.stopped_by
        if failed is not None:
            why = f": {failed.error}" if failed.error else ""
            lines.append(f"  {failed.verdict}: {failed.name}{why}")
            lines.append(f"  run dir: {failed.run_dir}")
            lines.append(f"  reproduce: {reproduce(failed.run_dir)}")
        elif self.interrupted:
            lines.append("  interrupted before a run failed")
        elif not unknown:
            lines.append(f"  all {self.limit} runs passed")
        return lines


RunStep = Callable[[RunSpec], Attempt]


def hunt(spec: RunSpec, limit: int, step: RunStep, say: Callable[[str], None] = print) -> Hunt:
    """Run `spec` with seeds spec.seed, spec.seed+1, ... through `step` until a run
    stops the hunt or `limit` runs are done. Ctrl-C (a KeyboardInterrupt, after the
    run in progress cleaned up) ends it with what ran so far."""
    check_limit(limit)
    attempts: list[Attempt] = []
    try:
        for i in range(limit):
            seeded = spec.model_copy(update={"seed": spec.seed + i})
            say(f"until-fail [{i + 1}/{limit}] seed {seeded.seed}")
            attempt = step(seeded)
            attempts.append(attempt)
            say(f"    seed {attempt.seed}: {attempt.verdict} ({attempt.run_dir})")
            if attempt.code in STOPS:
                break
    except KeyboardInterrupt:
        return Hunt(limit, tuple(attempts), interrupted=True)
    return Hunt(limit, tuple(attempts))


def _real_step(warm: WarmCluster, spark_master: str | None, junit: Path | None) -> RunStep:
    """A real run on the warm cluster, judged before the next one starts."""
    from kafka_trial.report.judge import judge
    from kafka_trial.report.text import render

    def step(spec: RunSpec) -> Attempt:
        run_dir = new_run_dir(spec)
        try:
            run(spec, run_dir, warm)
            judged = judge(run_dir, spark_master=spark_master, junit=junit, say=None)
        except TrialError as e:
            # The next run would meet the same problem; its line is the hunt's result.
            print(e.one_line(), file=sys.stderr)
            return Attempt(spec.seed, run_dir, e.exit_code, e.problem)
        if judged.exit_code == 1 and judged.results is not None:
            print(render(judged.results, judged.run_dir))
        return Attempt(spec.seed, run_dir, judged.exit_code)

    return step


def run_until_fail(
    spec: RunSpec, limit: int, spark_master: str | None = None, junit: Path | None = None
) -> int:
    """`kafka-trial run --until-fail N`: the hunt on one warm cluster, which is
    removed at the end however the hunt ended; the summary, and the exit code."""
    check_limit(limit)
    warm = WarmCluster()
    progress = functools.partial(print, file=sys.stderr)
    try:
        with signals_interrupt():
            result = hunt(spec, limit, _real_step(warm, spark_master, junit), progress)
    finally:
        with signals_deferred():
            warm.close()
    for line in result.summary():
        print(line)
    if result.interrupted:
        print(
            "kafka-trial: interrupted; the clusters are cleaned up -- fix: go on with "
            f"--seed {spec.seed + len(result.attempts)}",
            file=sys.stderr,
        )
    return result.exit_code
