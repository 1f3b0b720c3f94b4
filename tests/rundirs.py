"""Finding run directories in a runs directory, which also holds `latest`."""

from __future__ import annotations

from pathlib import Path


def run_dirs(runs: Path) -> list[Path]:
    """The run directories under `runs`: not the `latest` link to the newest."""
    return sorted(p for p in runs.iterdir() if p.is_dir() and not p.is_symlink())
