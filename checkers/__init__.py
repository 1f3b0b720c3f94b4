"""What a history may show and what that means: the anomaly registry (`anomalies`),
the claims the presets put on trial (`claims`), the verdict policy (`verdict`), the
analysis's settings (`settings`) and the typed verdict itself (`results.Results`).
Pure definitions and functions: no I/O beyond reading results.json, no Spark."""

# The registry checks the anomaly names of every spec built once checkers is imported.
from kafka_trial.checkers import settings  # noqa: F401
