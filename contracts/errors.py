"""The one error type the CLI turns into a single line and a non-zero exit."""

from __future__ import annotations


class TrialError(Exception):
    """A problem the user can fix: `problem` says what is wrong, `fix` what to do.
    The command exits with `exit_code`: 3, a setup problem, unless said otherwise."""

    exit_code = 3

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem} -- fix: {fix}")
        self.problem = problem
        self.fix = fix

    def one_line(self) -> str:
        return f"kafka-trial: {self.problem} -- fix: {self.fix}"


class RunAborted(TrialError):
    """The harness could not finish a run it had started (its Docker engine went away):
    the history holds what happened up to then, which cannot decide a verdict, so the
    command exits 2 (unknown), never 1."""

    exit_code = 2
