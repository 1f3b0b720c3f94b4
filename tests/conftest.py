from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from kafka_trial.spark_analysis.session import spark_session

    s = spark_session("local[2]")
    yield s
    s.stop()
