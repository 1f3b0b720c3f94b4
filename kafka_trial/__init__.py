"""kafka-trial: a Jepsen-style fault-injection harness for real Apache Kafka.

Installed code has this one import name. The repository's folders map onto its
subpackages (see pyproject.toml); their layers, and which may import which, are in
README.md, section "Architecture" (tests/unit/test_layers.py enforces them).

The public API is documented in docs/api.md.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kafka-trial")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0+unknown"
