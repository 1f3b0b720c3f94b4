"""The same analysis job on a real standalone Spark cluster (master + worker JVMs)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from tests.histories import Builder
from tests.results import ran


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory) -> Iterator[str]:
    home = os.path.dirname(pyspark.__file__)
    env = {**os.environ, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1"}
    spark_class = os.path.join(home, "bin", "spark-class")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    logs = tmp_path_factory.mktemp("spark-logs")
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
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    assert r.returncode == 1, r.stdout + r.stderr  # invalid: planted anomalies
    res = json.loads((run / "results.json").read_text())
    assert res["analysis"]["spark_master"] == spark_cluster
    counts = ran(res)
    assert counts["lost-write"] == 1 and counts["duplicate"] == 1
    assert counts["int-poll-skip"] == 1  # the read of partition 0 jumped over offset 1
    assert sum(counts.values()) == 3
