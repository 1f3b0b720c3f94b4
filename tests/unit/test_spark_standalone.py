"""The same analysis job on a real standalone Spark cluster (master + worker JVMs)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from kafka_trial.checkers.results import Results

from tests.histories import Builder
from tests.results import ran


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The master, the worker and the executor live for this one small analysis, so they
# compile with C1 alone, as a one-shot driver does (spark_analysis.spark.session): what
# the test asks is that the job runs on a cluster, not how fast its JVMs get.
SHORT_LIVED_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
_ENV: dict[str, str] = {}


def _cluster_env(conf_dir: Path) -> dict[str, str]:
    """The environment of the cluster's daemons and of the driver that uses them."""
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.executor.extraJavaOptions {SHORT_LIVED_JVM}\n"
    )
    _ENV.update(
        SPARK_CONF_DIR=str(conf_dir),
        SPARK_DAEMON_JAVA_OPTS=SHORT_LIVED_JVM,
        SPARK_LOCAL_IP="127.0.0.1",
    )
    return dict(_ENV)


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory) -> Iterator[str]:
    home = os.path.dirname(pyspark.__file__)
    logs = tmp_path_factory.mktemp("spark-logs")
    env = {**os.environ, **_cluster_env(tmp_path_factory.mktemp("spark-conf")), "SPARK_HOME": home}
    spark_class = os.path.join(home, "bin", "spark-class")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs = [
        subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(_free_port()),
            ],
            env=env,
            stdout=(logs / "master.log").open("w"),
            stderr=subprocess.STDOUT,
        )
    ]
    time.sleep(3)
    procs.append(
        subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                str(_free_port()),
            ],
            env=env,
            stdout=(logs / "worker.log").open("w"),
            stderr=subprocess.STDOUT,
        )
    )
    deadline = time.monotonic() + 60
    while "Successfully registered with master" not in (logs / "worker.log").read_text():
        if time.monotonic() > deadline:
            pytest.fail("Spark worker did not register:\n" + (logs / "worker.log").read_text())
        time.sleep(0.5)
    try:
        yield url
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(30)


@pytest.mark.slow
def test_analyze_on_a_standalone_cluster(spark_cluster: str, tmp_path: Path) -> None:
    b = Builder(tmp_path / "run")
    b.sends(0, [(10, 0, 0, "ok"), (11, 0, 1, "ok"), (12, 0, 2, "ok")])
    b.sends(1, [(13, 1, 0, "ok")])
    b.poll(2, [(10, 0, 0), (12, 0, 2), (13, 1, 0), (13, 1, 1)])
    run = b.done()
    r = subprocess.run(
        [sys.executable, "-m", "kafka_trial", "analyze", str(run), "--spark-master", spark_cluster],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **_ENV},
    )
    assert r.returncode == 1, r.stdout + r.stderr  # invalid: planted anomalies
    res = Results.from_json(run / "results.json")
    assert res.analysis.spark_master == spark_cluster
    counts = ran(res)
    assert counts["lost-write"] == 1 and counts["duplicate"] == 1
    assert counts["int-poll-skip"] == 1  # the read of partition 0 jumped over offset 1
    assert sum(counts.values()) == 3
