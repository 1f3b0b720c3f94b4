"""The shape the code keeps so that a newcomer can read it: no package function over
80 lines, and no comment pointing at a file outside the repository or at an issue."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Package code: every folder installed as a subpackage (pyproject's package-dir).
PACKAGES = tuple(
    folder
    for folder in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ].values()
    if list((ROOT / folder).glob("*.py"))
)
MAX_LINES = 80


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_no_package_function_is_over_80_lines() -> None:
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, "split these by step: " + "; ".join(long)


def test_no_package_code_points_outside_the_repository_or_at_an_issue() -> None:
    outside = re.compile(r"DESIGN\.md|shared/CLAIMS\.md|\.\./shared|\b(?:issue|PR) ?#?\d+", re.I)
    found = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in _sources()
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if outside.search(line)
    ]
    assert not found, "; ".join(found)
