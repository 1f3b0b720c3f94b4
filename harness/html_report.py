"""Where the HTML report was before it had a package of its own (docs/api.md): kept so
that users' scripts that write reports this way go on working."""

from kafka_trial.report.html import write_report

__all__ = ["write_report"]
