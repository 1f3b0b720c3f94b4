"""Installing kafka-trial adds one import name, `kafka_trial`, and nothing else.

The wheel is built once from this checkout and installed into a fresh virtual
environment (its third-party dependencies come from this interpreter's
site-packages), and the installed copy must work from outside the checkout.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools leaves build/ behind in the tree it builds.
    src = tmp_path_factory.mktemp("src") / "kafka-trial"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "runs", "build", "*.egg-info"))
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("kafka_trial-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    env = tmp_path_factory.mktemp("venv")
    venv.create(env, system_site_packages=True, with_pip=False)
    py = env / "bin" / "python"
    # pip of this interpreter installs into the venv: no network, no dependencies.
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "-q",
            "--no-deps",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    yield env


def test_the_wheel_holds_only_kafka_trial(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {
        "kafka_trial",
        wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info",
    }
    # Build contexts and Spark's logging config ship as package data.
    assert "kafka_trial/dockerfiles/kafka/Dockerfile" in names
    assert "kafka_trial/dockerfiles/toxiproxy/Dockerfile" in names
    assert "kafka_trial/dockerfiles/admin/KafkaTrialAdmin.java" in names
    # kt-lazyfs's Go source: an installed kafka-trial builds the filesystem from it.
    assert {"kafka_trial/lazyfs/go.mod", "kafka_trial/lazyfs/go.sum"} <= set(names)
    assert "kafka_trial/lazyfs/main.go" in names
    assert "kafka_trial/spark_analysis/log4j2.properties" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert (
        "kafka-trial = kafka_trial.harness.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
    )


def test_the_installed_copy_works_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    site = next((installed / "lib").glob("python3*/site-packages"))
    added = {p.name for p in site.iterdir()} - {"__pycache__"}
    assert {n for n in added if not n.endswith(".dist-info")} == {"kafka_trial"}
    code = (
        "import kafka_trial, kafka_trial.cluster.images as im, kafka_trial.harness.cli;"
        "print(kafka_trial.__file__); print(im.docker_dir()); print(im._lazyfs_dir())"
    )
    r = subprocess.run(
        [str(installed / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the checkout: nothing may resolve from the repo's folders
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    module_file, docker_dir, lazyfs_dir = r.stdout.split()
    assert module_file.startswith(str(site))
    assert docker_dir.startswith(str(site)) and Path(docker_dir, "kafka", "Dockerfile").is_file()
    assert lazyfs_dir.startswith(str(site)) and Path(lazyfs_dir, "go.sum").is_file()
    v = subprocess.run(
        [str(installed / "bin" / "kafka-trial"), "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert v.returncode == 0 and v.stdout.startswith("kafka-trial 0."), v.stderr
