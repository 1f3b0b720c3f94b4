"""Which Java `ensure_java` accepts: the version line wherever the JVM prints it."""

from __future__ import annotations

import pytest
from kafka_trial.spark_analysis.spark import java
from kafka_trial.spark_analysis.spark.java import ensure_java, java_major


def test_the_version_line_is_found_after_the_jvms_picked_up_notice() -> None:
    out = (
        "Picked up JAVA_TOOL_OPTIONS: -Xss4m\n"
        'openjdk version "17.0.13" 2024-10-15\n'
        "OpenJDK Runtime Environment (build 17.0.13+11-Debian-2)\n"
    )
    assert java_major(out) == 17
    assert java_major('java version "1.8.0_402"\n') == 1
    assert java_major('openjdk version "21" 2023-09-19\n') == 21
    assert java_major("") == java_major("no java here\n") == 0


def test_this_machines_java_passes_with_java_tool_options_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before, the JVM's "Picked up ..." line was read as the version: 0, so every
    # session start installed a JDK, or failed where it could not.
    ensure_java()  # a fresh machine gets its Java here, as the suite's first analysis does

    def no_install(*_: object) -> None:
        raise AssertionError("ensure_java tried to install Java")

    monkeypatch.setattr(java, "apt_install", no_install)
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Dkafka.trial.test=1")
    ensure_java()
