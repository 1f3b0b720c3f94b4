"""The PySpark job that judges a history.

Public: `analyze(target, spark_master=None, out_dir=None)`.

By stage, bottom-up (each imports only the ones before it; tests/unit/test_layers.py
holds the order):

- spark/: the session every stage runs on, and how one analysis sizes its work.
- read/: the history into flat rows (natively, while the run writes it, or by
  Spark's JSON parse) and the `Frames` the checks read; its __init__ is the one
  interface for reading a history.
- facts/: what the history proves, shared by every check (`AnalysisFrames`), and
  its counts.
- cycles/, then checks/: one check per anomaly of the registry, run in one pass,
  and what the history cannot decide.
- at the top: job.py, the order of the stages; check_settings.py, the run's
  settings for them; output.py and report_data.py, the `Results` and the files
  written from them.
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
