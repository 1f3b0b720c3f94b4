"""The layering, asserted from the code's own imports so that it stays true.

contracts -> cluster -> nemesis, workloads, checkers -> spark_analysis -> report -> harness:
a package may import only the packages below it (every import counts, including
ones inside functions and under TYPE_CHECKING).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Package -> the packages it may import. Stages do not import each other, except that
# the Spark jobs implement the checkers' definitions and use their verdict policy.
ALLOWED: dict[str, set[str]] = {
    "contracts": set(),
    "cluster": {"contracts"},
    "nemesis": {"contracts", "cluster"},
    "workloads": {"contracts", "cluster"},
    "checkers": {"contracts"},
    # spark_analysis uses cluster only for host installs (a Java runtime), and the
    # nemesis catalog only to tell fault ops from heals.
    "spark_analysis": {"contracts", "cluster", "nemesis", "checkers"},
    # The output layer: it reads Results and the run directory, asks the registries
    # (checkers, nemesis) what things mean, and judges through the analysis.
    "report": {"contracts", "nemesis", "checkers", "spark_analysis"},
    "harness": {
        "contracts",
        "cluster",
        "nemesis",
        "workloads",
        "checkers",
        "spark_analysis",
        "report",
    },
}
# The root package only carries the version and `python -m kafka_trial`.
ROOT_PACKAGE_MAY_IMPORT = {"harness"}
OLD_NAMES = {
    "harness",
    "nemesis",
    "workloads",
    "checkers",
    "spark_analysis",
    "contracts",
    "report",
}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement in a file."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def import_graph() -> dict[str, dict[str, list[str]]]:
    """package -> imported package -> the places (file:line) that import it."""
    graph: dict[str, dict[str, list[str]]] = {}
    for pkg in [*ALLOWED, "kafka_trial"]:
        edges = graph.setdefault(pkg, {})
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for line, mod in _imports(path):
                parts = mod.split(".")
                if parts[0] == "kafka_trial" and len(parts) > 1 and parts[1] != pkg:
                    where = f"{path.relative_to(ROOT)}:{line}"
                    edges.setdefault(parts[1], []).append(where)
    return graph


def test_no_import_runs_upward() -> None:
    graph = import_graph()
    upward = [
        f"{pkg} -> {dep} ({', '.join(places)})"
        for pkg, deps in graph.items()
        if pkg != "kafka_trial"
        for dep, places in deps.items()
        if dep not in ALLOWED[pkg]
    ]
    assert upward == []
    assert set(graph["kafka_trial"]) <= ROOT_PACKAGE_MAY_IMPORT


def test_the_import_graph_has_no_cycles() -> None:
    graph = {p: set(d) for p, d in import_graph().items()}
    state: dict[str, str] = {}

    def visit(node: str, trail: list[str]) -> None:
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", "cycle: " + " -> ".join([*trail, node])
        state[node] = "open"
        for dep in sorted(graph.get(node, ())):
            visit(dep, [*trail, node])
        state[node] = "done"

    for pkg in graph:
        visit(pkg, [])


def test_code_imports_only_through_the_one_import_name() -> None:
    """`import harness` would work from a checkout and break once installed."""
    bare = [
        f"{path.relative_to(ROOT)}:{line} imports {mod}"
        for folder in [*ALLOWED, "kafka_trial", "tests", "bench", "examples", "tools"]
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, mod in _imports(path)
        if mod.split(".")[0] in OLD_NAMES
    ]
    assert bare == []


def test_a_planted_upward_import_is_caught(tmp_path: Path, monkeypatch) -> None:
    """The check itself can fail: a contracts module importing the harness is found."""
    for pkg in ALLOWED:
        (tmp_path / pkg).mkdir()
    (tmp_path / "kafka_trial").mkdir()
    (tmp_path / "contracts" / "bad.py").write_text("from kafka_trial.harness.cli import main\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    graph = import_graph()
    assert graph["contracts"] == {"harness": ["contracts/bad.py:1"]}


# The analysis's stages, bottom-up: each may import only the stages before it. The
# modules at spark_analysis/'s top (the job that orders the stages, its outputs) sit
# above them all.
ANALYSIS_STAGES = ("spark", "read", "facts", "cycles", "checks")


def test_the_analysis_stages_import_only_downward() -> None:
    upward = []
    for i, stage in enumerate(ANALYSIS_STAGES):
        below = set(ANALYSIS_STAGES[:i])
        for path in sorted((ROOT / "spark_analysis" / stage).rglob("*.py")):
            for line, mod in _imports(path):
                parts = mod.split(".")
                if parts[:2] != ["kafka_trial", "spark_analysis"] or len(parts) < 3:
                    continue
                target = parts[2]
                if target != stage and target not in below:
                    upward.append(f"spark_analysis/{stage}/{path.name}:{line} imports {mod}")
    assert not upward, "; ".join(upward)
