"""kafka-trial: a Jepsen-style fault-injection harness for real Apache Kafka.

Installed code has this one import name. The repository's folders map onto its
subpackages (see pyproject.toml), layered bottom-up:

    contracts -> cluster -> nemesis, workloads, checkers -> spark_analysis -> harness

The public API is documented in docs/api.md.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kafka-trial")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0+unknown"
