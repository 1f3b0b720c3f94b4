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


def test_readme_preset_table_is_the_presets_words() -> None:
    from kafka_trial.harness.presets import PRESETS, markdown_table

    table = markdown_table()
    assert table in README
    assert all(f"| `{name}` |" in table for name in PRESETS)


def test_presets_say_where_to_start_and_how_long_a_run_must_be(capsys) -> None:
    """A newcomer's questions: which preset first, and how short a run may be before
    its faults cannot fire; the fault names are the README's."""
    from kafka_trial.harness.cli import main
    from kafka_trial.harness.presets import PRESET_WORDS

    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Start here: `kafka-trial run --preset safe`")
    assert "  fault packages: kill-leader, isolate-broker, pause; every one fires in " in out
    assert "--duration 14 or more" in out
    assert "--duration 4 or more" in out  # inflight-reorder: 1 s quiet, 3 s faults
    for _, faults in PRESET_WORDS.values():
        assert f"  faults: {faults}\n" in out


def test_every_flag_of_every_command_has_help() -> None:
    from kafka_trial.harness.cli import parser

    p = parser()
    bare = [
        f"{name} {'/'.join(a.option_strings) or a.dest}"
        for name, sub in p._subparsers._group_actions[0].choices.items()  # type: ignore[union-attr]
        for a in sub._actions
        if not a.help and a.dest != "help"
    ]
    assert bare == []
    subs = p._subparsers._group_actions[0]  # type: ignore[union-attr]
    assert all(c.help for c in subs._choices_actions)
    assert all(sub.description for sub in subs.choices.values())
