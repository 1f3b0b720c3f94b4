"""The PySpark job that judges a history.

Public: `analyze(target, spark_master=None, out_dir=None)`.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # Lazy: importing the package must not start the Spark machinery.
    if name == "analyze":
        from kafka_trial.spark_analysis.job import analyze

        return analyze
    raise AttributeError(name)
