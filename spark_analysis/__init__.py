"""The PySpark job that judges a history.

Public: `analyze(target, spark_master=None, out_dir=None)`.
"""

from __future__ import annotations

from typing import Any

_PUBLIC = {"analyze": "kafka_trial.spark_analysis.job"}


def __getattr__(name: str) -> Any:
    # Lazy: importing the package must not start the Spark machinery.
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(name)
