"""Which freezer file thaws a container, per cgroup version and Docker's driver."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_trial.cluster.freezer import freeze_file, thaw

ID = "0123abcd"


@pytest.mark.parametrize(
    ("rel", "frozen", "thawed"),
    [
        (f"freezer/docker/{ID}/freezer.state", "FROZEN", "THAWED"),  # v1, cgroupfs
        (f"freezer/system.slice/docker-{ID}.scope/freezer.state", "FROZEN", "THAWED"),
        (f"docker/{ID}/cgroup.freeze", "1", "0"),  # v2, cgroupfs
        (f"system.slice/docker-{ID}.scope/cgroup.freeze", "1", "0"),  # v2, systemd
    ],
)
def test_thaw_writes_the_layouts_own_thawed_value(
    tmp_path: Path, rel: str, frozen: str, thawed: str
) -> None:
    path = tmp_path / rel
    path.parent.mkdir(parents=True)
    path.write_text(frozen)
    # Another container's file is left alone.
    other = tmp_path / rel.replace(ID, "ffff")
    other.parent.mkdir(parents=True)
    other.write_text(frozen)
    assert freeze_file(ID, tmp_path) == path
    assert thaw(ID, tmp_path) == path
    assert path.read_text() == thawed
    assert other.read_text() == frozen


def test_no_freezer_here_is_none_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "freezer" / "docker").mkdir(parents=True)
    assert thaw(ID, tmp_path) is None
    assert list((tmp_path / "freezer" / "docker").iterdir()) == []
