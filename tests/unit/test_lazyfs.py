"""kt-lazyfs, the write-back filesystem (lazyfs/): its own Go tests, and how it is
wired into the spec, the image and the broker containers. Plain storage must stay
exactly what it was: no device, no capability, no FUSE."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from docker.errors import NotFound
from kafka_trial.cluster import images
from kafka_trial.cluster.brokers import Broker
from kafka_trial.cluster.provision import (
    BACKING_DIR,
    DATA_DIR,
    Provisioner,
    data_volume_path,
    storage_options,
)
from kafka_trial.cluster.settings import ClusterSpec
from kafka_trial.contracts.errors import TrialError

ROOT = Path(__file__).resolve().parents[2]
WRITEBACK = ClusterSpec(storage="writeback")


def test_go_tests_of_the_filesystem_pass() -> None:
    """`go test ./...` in lazyfs/: the overlay against a model, and, where /dev/fuse
    and root are there (CI), a real mount: lose-unfsynced, renames, mmap, enospc,
    and the supervisor's crash. A machine without Go fails here with the fix, as
    building Toxiproxy would."""
    go = images.go_binary("kt-lazyfs's tests")
    env = dict(os.environ, GOFLAGS="-mod=mod", CGO_ENABLED="0")
    r = subprocess.run(
        [go, "test", "-count=1", "-timeout", "240s", "./..."],
        cwd=ROOT / "lazyfs",
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert r.stdout.startswith("ok"), r.stdout
    fmt = subprocess.run(
        [str(Path(go).with_name("gofmt")), "-l", "."],
        cwd=ROOT / "lazyfs",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert fmt.stdout == "", f"gofmt would change: {fmt.stdout}"
    vet = subprocess.run(
        [go, "vet", "./..."],
        cwd=ROOT / "lazyfs",
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert vet.returncode == 0, vet.stderr[-2000:]


def test_missing_go_is_an_error_that_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setattr(images, "Path", _NoGoPath)
    with pytest.raises(TrialError) as e:
        images.go_binary("kt-lazyfs")
    assert "Go is needed to build kt-lazyfs" in str(e.value)
    assert "install Go" in e.value.fix


class _NoGoPath(type(Path())):  # type: ignore[misc]
    def exists(self, **_kw: object) -> bool:
        return False if str(self).endswith("/go") else super().exists()


def test_plain_storage_is_the_default_and_adds_nothing() -> None:
    spec = ClusterSpec()
    assert spec.storage == "plain"
    assert storage_options(spec, ["name=apparmor", "name=seccomp,profile=default"]) == {}
    assert data_volume_path(spec) == DATA_DIR
    env = Provisioner(None, spec, None, "r")._broker_env(1, "cid", [9092])  # type: ignore[arg-type]
    assert not any(k.startswith("KT_") for k in env)


def test_writeback_gets_the_fuse_device_and_sys_admin_only() -> None:
    opts = storage_options(WRITEBACK, ["name=seccomp,profile=default"])
    assert opts == {"devices": ["/dev/fuse:/dev/fuse:rwm"], "cap_add": ["SYS_ADMIN"]}
    assert "privileged" not in opts
    # AppArmor's docker-default profile denies mount(2) whatever the capabilities.
    assert storage_options(WRITEBACK, ["name=apparmor"])["security_opt"] == ["apparmor=unconfined"]
    assert data_volume_path(WRITEBACK) == BACKING_DIR
    env = Provisioner(None, WRITEBACK, None, "r")._broker_env(1, "cid", [9092])  # type: ignore[arg-type]
    assert env["KT_STORAGE"] == "writeback"
    assert env["KAFKA_LOG_DIRS"] == DATA_DIR  # the broker sees the mount, not the volume


def test_a_faketime_clock_is_preloaded_only_when_asked() -> None:
    env = Provisioner(None, ClusterSpec(clock="faketime"), None, "r")._broker_env(1, "c", [9092])  # type: ignore[arg-type]
    assert env["KT_CLOCK"] == "faketime" and "KT_STORAGE" not in env
    script = (ROOT / "docker" / "kafka" / "entrypoint.sh").read_text()
    guarded = script[script.index('if [[ "${KT_CLOCK:-real}" == faketime ]]') :]
    guarded = guarded[: guarded.index("\nfi\n")]
    # The preload and the settings the JVM needs live inside the guard, and only there.
    assert script.count("LD_PRELOAD") == guarded.count("LD_PRELOAD") == 1
    for setting in (
        "libfaketimeMT.so.1",
        "FAKETIME_DONT_FAKE_MONOTONIC=1",
        "FAKETIME_FORCE_MONOTONIC_FIX=0",
        "FAKETIME_CACHE_DURATION=1",
    ):
        assert setting in guarded, setting


def test_writeback_refuses_a_foreign_kafka_image() -> None:
    # Another image has no kt-lazyfs: its broker would run on plain storage unnoticed.
    with pytest.raises(ValueError, match=r"unset cluster\.kafka_image"):
        ClusterSpec(storage="writeback", kafka_image="apache/kafka:4.1.0")
    assert ClusterSpec(kafka_image="apache/kafka:4.1.0").storage == "plain"


def test_the_entrypoint_mounts_only_when_asked() -> None:
    script = (ROOT / "docker" / "kafka" / "entrypoint.sh").read_text()
    guard = 'if [[ "${KT_STORAGE:-plain}" == writeback && -z "${KT_LAZYFS_CHILD:-}" ]]'
    assert guard in script
    assert f"--backing {BACKING_DIR}" in script and f"--mount {DATA_DIR}" in script
    assert "COPY kt-lazyfs" in (ROOT / "docker" / "kafka" / "Dockerfile").read_text()


def test_the_image_tag_follows_the_filesystem_source(tmp_path, monkeypatch) -> None:
    src = tmp_path / "lazyfs"
    shutil.copytree(ROOT / "lazyfs", src)
    monkeypatch.setattr(images, "_lazyfs_dir", lambda: src)
    before = images.lazyfs_digest()
    assert {p.name for p in images.lazyfs_sources()} >= {"go.mod", "go.sum", "main.go"}
    assert not any(p.name.endswith("_test.go") for p in images.lazyfs_sources())
    (src / "overlay_test.go").write_text("package main\n")
    assert images.lazyfs_digest() == before, "tests are not part of the binary"
    (src / "fs.go").write_text((src / "fs.go").read_text() + "\n// changed\n")
    assert images.lazyfs_digest() != before


def test_the_fs_verb_needs_writeback_storage() -> None:
    b = Broker(1, None, None, None, (9092,))  # type: ignore[arg-type]
    with pytest.raises(TrialError, match="no write-back filesystem"):
        b.fs("status")


class _LostOutput:
    """A container whose docker exec ends with exit 0 and no output, as Docker's did
    under load in CI; the reply file holds what ctl answered, or is missing."""

    status = "running"  # a fault's exec asks first (Broker._exec)

    def __init__(self, reply: str | None) -> None:
        self.reply = reply
        self.asked: list[str] = []

    def reload(self) -> None:
        pass

    def exec_run(self, cmd: list[str]) -> SimpleNamespace:
        self.path = cmd[cmd.index("--reply-file") + 1]
        return SimpleNamespace(exit_code=0, output=b"")

    def get_archive(self, path: str) -> tuple[list[bytes], dict]:
        self.asked.append(path)
        if self.reply is None or path != self.path:
            raise NotFound("no such file")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            data = self.reply.encode()
            info = tarfile.TarInfo(path.rsplit("/", 1)[-1])
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        return [buf.getvalue()], {}


def test_fs_reads_the_reply_file_when_docker_exec_loses_the_output() -> None:
    c = _LostOutput('{"files":3,"bytes":10,"command":"checkpoint"}\n')
    b = Broker(2, c, None, None, (9092,), storage="writeback")  # type: ignore[arg-type]
    assert b.fs("checkpoint")["files"] == 3
    assert c.asked == [c.path] and c.path.startswith("/tmp/kt-lazyfs-reply-")


def test_fs_without_output_or_reply_file_is_an_error_naming_the_command() -> None:
    b = Broker(2, _LostOutput(None), None, None, (9092,), storage="writeback")  # type: ignore[arg-type]
    with pytest.raises(TrialError, match="kt-lazyfs 'checkpoint' on broker 2 failed"):
        b.fs("checkpoint")


class _LocalShell:
    """A container whose exec runs the command in this machine's bash, with the
    clock files moved under a temporary directory: the strobe's own script, run."""

    status = "running"  # a fault's exec asks first (Broker._exec)

    def __init__(self, root: Path) -> None:
        self.root = root

    def reload(self) -> None:
        pass

    def exec_run(self, cmd: list[str]) -> SimpleNamespace:
        script = cmd[-1].replace("/run/", f"{self.root}/")
        res = subprocess.run(["bash", "-c", script], capture_output=True, timeout=30)
        return SimpleNamespace(exit_code=res.returncode, output=res.stdout + res.stderr)


def test_a_strobe_returns_once_its_loop_has_written_the_offset(tmp_path: Path) -> None:
    # The measuring window starts when strobe_clock returns; CI once measured a whole
    # window of true time because a detached exec began late. Returning only after
    # the loop's first write, and long before the strobe ends, closes that gap.
    b = Broker(3, _LocalShell(tmp_path), None, None, (9092,), clock="faketime")  # type: ignore[arg-type]
    t0 = time.monotonic()
    b.strobe_clock(60, 400, 30)
    assert time.monotonic() - t0 < 5  # not the strobe's 30 s
    clock = tmp_path / "kt-faketime"
    assert clock.read_text().strip() == "+60"
    seen = set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len(seen) < 2:
        seen.add(clock.read_text().strip())
        time.sleep(0.05)
    assert seen == {"+60", "+0"}
    b.set_clock(0)  # ends the strobe: the flag is gone and the file stays true
    time.sleep(1)
    assert not (tmp_path / "kt-strobe").exists() and clock.read_text().strip() == "+0"


def test_a_strobe_over_by_time_leaves_the_clock_true(tmp_path: Path) -> None:
    b = Broker(3, _LocalShell(tmp_path), None, None, (9092,), clock="faketime")  # type: ignore[arg-type]
    b.strobe_clock(60, 300, 1)  # the loop runs for duration + 1 s at most
    deadline = time.monotonic() + 10
    while (tmp_path / "kt-strobe").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (tmp_path / "kt-strobe").exists()
    assert (tmp_path / "kt-faketime").read_text().strip() == "+0"


def test_a_strobe_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    b = Broker(3, _LocalShell(tmp_path / "absent"), None, None, (9092,), clock="faketime")  # type: ignore[arg-type]
    with pytest.raises(TrialError, match="broker 3's clock strobe did not start"):
        b.strobe_clock(60, 400, 30)
