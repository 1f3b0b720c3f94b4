"""The README's vocabulary tables are renderings of the registries, not a second copy."""

from __future__ import annotations

from pathlib import Path

from kafka_trial.checkers import anomalies
from kafka_trial.nemesis import catalog

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_readme_fault_table_is_the_package_registry() -> None:
    table = catalog.markdown_table()
    assert table in README
    assert all(f"| `{name}` |" in table for name in catalog.PACKAGES)


def test_readme_anomaly_table_is_the_anomaly_registry() -> None:
    table = anomalies.markdown_table()
    assert table in README
    assert all(f"| `{name}` |" in table for name in anomalies.ANOMALY_TYPES)


def test_cli_help_lists_the_registries() -> None:
    from kafka_trial.harness.cli import parser

    run = parser()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    helps = {a.dest: a.help or "" for a in run._actions}
    assert all(name in helps["nemesis"] for name in catalog.PACKAGES)
    assert all(name in helps["allow"] for name in anomalies.ANOMALY_TYPES)


def test_presets_command_lists_every_preset_with_its_claim(capsys) -> None:
    from kafka_trial.harness.cli import main
    from kafka_trial.harness.presets import CLAIMS, PRESETS

    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    for name in PRESETS:
        assert f"\n{name}\n" in f"\n{out}", name
        assert f"claim {CLAIMS[name].id}: " in out
    assert "  faults: kill-leader, isolate-broker, pause\n" in out  # safe's
