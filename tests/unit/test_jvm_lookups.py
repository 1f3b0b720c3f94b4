"""Py4J's lookups are kept per JVM (spark_analysis.spark.jvm_lookups): a class and its
static methods are asked for once, a static field's value every time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from py4j.clientserver import JavaClient
from py4j.java_gateway import JavaClass, JavaMember


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    sent: list[str] = []
    real = JavaClient.send_command

    def counted(self: JavaClient, command: str, *args: object, **kw: object) -> object:
        # Not a lookup: Python's collector releasing a Java object ("m" "d"), whenever
        # it runs (a CI counted two such in the middle of this test).
        if not command.startswith("m\nd\n"):
            sent.append(command)
        return real(self, command, *args, **kw)

    monkeypatch.setattr(JavaClient, "send_command", counted)
    yield sent


def test_a_function_is_looked_up_once_and_then_only_called(spark, round_trips) -> None:
    jvm = spark.sparkContext._jvm
    jvm.functions.col("warm")  # whatever an earlier test left, the lookups are now kept
    round_trips.clear()
    first = jvm.functions.col
    col = jvm.functions.col("x")
    assert isinstance(first, JavaMember) and jvm.functions.col is first
    assert len(round_trips) == 1  # the call itself
    assert col.toString() == "x"


def test_a_class_is_kept_under_the_name_it_was_asked_by(spark, round_trips) -> None:
    jvm = spark.sparkContext._jvm
    fqn = "org.apache.spark.sql.functions"
    assert isinstance(getattr(jvm, fqn), JavaClass)
    round_trips.clear()
    assert getattr(jvm, fqn) is getattr(jvm, fqn)
    assert round_trips == []


def test_a_static_fields_value_is_read_every_time(spark, round_trips) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm.java.lang.Integer.MAX_VALUE == 2**31 - 1
    round_trips.clear()
    assert jvm.java.lang.Integer.MAX_VALUE == 2**31 - 1
    # A package is not kept either, so the field costs its lookups again.
    assert len(round_trips) >= 1
    assert "MAX_VALUE" not in jvm.java.lang.Integer.__dict__
