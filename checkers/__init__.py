"""Anomaly definitions and the verdict policy: pure functions, no I/O, no Spark."""
