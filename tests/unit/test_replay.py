"""A replayed schedule is the same schedule: `kafka-trial run --config RUN_DIR/spec.json`
draws exactly the fault steps the run that wrote RUN_DIR drew, for every fault
package, every preset and random settings (on real runs' directories: the replay
test in tests/integration/test_claims.py)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.schedule import SCHEDULE_FILE, read_schedule, write_schedule
from kafka_trial.contracts.spec import SPEC_FILE
from kafka_trial.harness import cli
from kafka_trial.harness.presets import PRESETS
from kafka_trial.harness.runner import fault_schedule
from kafka_trial.harness.spec import RunSpec, build_spec, merge_config
from kafka_trial.nemesis.catalog import PACKAGES
from kafka_trial.nemesis.schedule import min_duration_s

# What a package may need of the workload besides the cluster's storage and clock:
# the first of these under which a spec with it builds.
_WORKLOADS: tuple[dict[str, Any], ...] = (
    {},
    {"producer": {"transactional": True}},
    {"producer": {"transactional": True, "own_process": True}},
    {"copier": {"workers": 1}},
    # app-partition cuts one instance's lane: every client gets a lane of its own.
    {"app": {"command": "true", "guarantee": "at-least-once"}, "cluster": {"client_lanes": 8}},
)


def _needs(faults: list[str]) -> dict[str, Any]:
    """Settings under which the packages are allowed: the cluster's storage and clock
    their catalog entries name, and the first workload that has what they act on."""
    cluster: dict[str, Any] = {}
    if any(PACKAGES[f].storage == "writeback" for f in faults):
        cluster["storage"] = "writeback"
    if any(PACKAGES[f].clock == "faketime" for f in faults):
        cluster["clock"] = "faketime"
    if any(PACKAGES[f].quorum == "dynamic" for f in faults):
        cluster["quorum"] = "dynamic"
    base: dict[str, Any] = {"nemesis": {"faults": faults}, "cluster": cluster}
    problems = []
    for workload in _WORKLOADS:
        config = merge_config(base, workload)
        try:
            build_spec({**config, "duration_s": 600})
        except TrialError as e:
            problems.append(e.problem)
            continue
        return config
    raise AssertionError(f"no settings allow {faults}: {problems}")


def _plain(package: str) -> bool:
    return _needs([package]) == {"nemesis": {"faults": [package]}, "cluster": {}}


def _random_config(rng: random.Random, faults: list[str]) -> dict[str, Any]:
    """Settings a user could give, with floats that do not print short (1/3 s) and
    seeds of any size, so a lossy round trip would change the steps."""
    config = _needs(faults)
    nemesis = config["nemesis"]
    nemesis["fault_s"] = rng.choice([rng.uniform(0.5, 12), 1 / 3, 8.0, 1e-3])
    nemesis["quiet_s"] = rng.choice([rng.uniform(0, 10), 0.1 + 0.2, 0.0, 6.0])
    nemesis["target_partition"] = rng.randrange(3)
    config["seed"] = rng.choice(
        [rng.randrange(1 << 20), rng.randrange(1 << 62), -rng.randrange(99)]
    )
    shortest = nemesis["fault_s"] + nemesis["quiet_s"]
    config["duration_s"] = shortest * rng.uniform(1, 12) + rng.random()
    return config


def _replayed(spec: RunSpec, run_dir: Path) -> tuple[RunSpec, list[Any]]:
    """What the run writes, and what `kafka-trial run --config RUN_DIR/spec.json`
    makes of it: its spec and its schedule.json, written again."""
    spec.write(run_dir)
    write_schedule(run_dir, fault_schedule(spec))
    args = cli.parser().parse_args(["run", "--config", str(run_dir / SPEC_FILE)])
    again = cli._load_spec(args)
    replay_dir = run_dir / "replay"
    replay_dir.mkdir()
    write_schedule(replay_dir, fault_schedule(again))
    first, second = (d / SCHEDULE_FILE for d in (run_dir, replay_dir))
    assert first.read_bytes() == second.read_bytes(), (first.read_text(), second.read_text())
    return again, read_schedule(replay_dir)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_package_replays_the_same_steps(tmp_path: Path, package: str) -> None:
    rng = random.Random(package)
    for i in range(8):
        run_dir = tmp_path / f"r{i}"
        run_dir.mkdir()
        spec = build_spec(_random_config(rng, [package]), source=package)
        again, steps = _replayed(spec, run_dir)
        assert again == spec
        # Every package asked for fires, so the comparison is never of two empty lists.
        assert any(s.action == "fault" and s.package == package for s in steps)


def test_random_package_mixes_and_seeds_replay_the_same_steps(tmp_path: Path) -> None:
    rng = random.Random(20261128)
    # Packages that need nothing of the cluster mix freely; the others, one at a time.
    plain = [p for p in sorted(PACKAGES) if _plain(p)]
    assert len(plain) >= 5, plain
    for i in range(60):
        faults = rng.sample(plain, rng.randint(2, min(6, len(plain))))
        run_dir = tmp_path / f"r{i}"
        run_dir.mkdir()
        spec = build_spec(_random_config(rng, faults), source="mix")
        again, steps = _replayed(spec, run_dir)
        assert again == spec
        assert {s.package for s in steps if s.action == "fault"} == set(faults)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_replays_the_same_steps(tmp_path: Path, name: str) -> None:
    spec = build_spec({**PRESETS[name], "seed": 977}, source=name)
    again, steps = _replayed(spec, tmp_path)
    assert again == spec
    assert bool(steps) == bool(spec.nemesis.faults)


def test_a_warm_clusters_fresh_topic_is_replayed_as_the_run_had_it(tmp_path: Path) -> None:
    # The runner rewrites spec.json with the fresh topic a warm cluster gave the run.
    spec = build_spec({"nemesis": {"faults": ["kill-leader"]}, "seed": 5, "duration_s": 30})
    warm = spec.model_copy(update={"topic": spec.topic.model_copy(update={"name": "trial-r2"})})
    again, _ = _replayed(warm, tmp_path)
    assert again.topic.name == "trial-r2" and again == warm


def test_a_different_seed_is_a_different_schedule() -> None:
    # Else every comparison above would pass however the spec round-tripped.
    plain = [p for p in sorted(PACKAGES) if _plain(p)]
    base = {"nemesis": {"faults": plain[:6]}, "duration_s": 200}
    a = fault_schedule(build_spec({**base, "seed": 1}))
    b = fault_schedule(build_spec({**base, "seed": 2}))
    assert a != b and min_duration_s(build_spec(base).nemesis) <= 200


@pytest.mark.parametrize("duration", ["inf", "nan"])
def test_a_duration_spec_json_cannot_hold_is_refused(duration: str) -> None:
    # JSON has no infinity: spec.json would say null, and no schedule would end.
    with pytest.raises(TrialError, match="duration_s"):
        build_spec({"duration_s": float(duration)})
