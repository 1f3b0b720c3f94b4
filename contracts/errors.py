"""The one error type the CLI turns into a single line and a non-zero exit."""

from __future__ import annotations


class TrialError(Exception):
    """A problem the user can fix: `problem` says what is wrong, `fix` what to do."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem} -- fix: {fix}")
        self.problem = problem
        self.fix = fix

    def one_line(self) -> str:
        return f"kafka-trial: {self.problem} -- fix: {self.fix}"
