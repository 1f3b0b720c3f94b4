from __future__ import annotations

from pathlib import Path

import pytest
from kafka_trial.contracts.errors import TrialError
from kafka_trial.harness.spec import RunSpec, build_spec, load_spec, read_saved_spec


def test_defaults_are_the_safe_configuration() -> None:
    s = RunSpec()
    assert s.producer.acks == "all" and s.producer.idempotence
    assert s.topic.replication_factor == 3 and s.topic.min_insync_replicas == 2
    assert not s.topic.unclean_leader_election
    assert s.cluster.brokers == 3


def test_spec_is_frozen() -> None:
    s = RunSpec()
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises its ValidationError
        s.seed = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"producer": {"acks": "2"}}, "producer.acks"),
        ({"producer": {"acks": "1", "idempotence": True}}, "idempotence requires acks=all"),
        ({"topic": {"replication_factor": 5}}, "exceeds cluster.brokers"),
        ({"nemesis": {"faults": ["meteor"]}}, "unknown nemesis meteor"),
        ({"check": {"allowed": ["nonsense"]}}, "unknown anomaly type"),
        ({"duration_s": -1}, "duration_s"),
        ({"surprise": 1}, "surprise"),
        ({"producer": {"txn_poll": True}}, "txn_poll needs producer.transactional"),
        ({"consumer": {"leave_fraction": 0.1}}, "need a group"),
        ({"consumer": {"mode": "subscribe", "max_poll_interval_ms": 2000}}, "max_poll_interval"),
        ({"producer": {"crash_fraction": 2}}, "producer.crash_fraction"),
        ({"producer": {"librdkafka": {"acks": "1"}}}, "producer.librdkafka sets acks"),
        ({"producer": {"abort_in_flight": True}}, "abort_in_flight needs deliberate aborts"),
        (
            {"producer": {"librdkafka": {"bootstrap.servers": "elsewhere:9092"}}},
            "producer.librdkafka sets bootstrap.servers",
        ),
    ],
)
def test_bad_values_give_one_clear_line(data: dict, needle: str) -> None:
    with pytest.raises(TrialError) as e:
        build_spec(data)
    line = e.value.one_line()
    assert needle in line
    assert "fix:" in line and "\n" not in line


def test_yaml_file_and_overrides(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("seed: 7\nproducer:\n  acks: '1'\n  idempotence: false\n")
    s = load_spec(p, {"producer": {"retries": 0}})
    assert (s.seed, s.producer.acks, s.producer.retries) == (7, "1", 0)


def test_missing_and_broken_config_files(tmp_path: Path) -> None:
    with pytest.raises(TrialError, match="does not exist"):
        load_spec(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("producer: [unclosed\n")
    with pytest.raises(TrialError, match="not valid YAML"):
        load_spec(bad)


def test_saved_spec_round_trips(tmp_path: Path) -> None:
    s = build_spec({"seed": 3, "nemesis": {"faults": ["kill-leader"]}})
    (tmp_path / "spec.json").write_text(s.to_json())
    assert read_saved_spec(tmp_path) == s


def test_every_preset_is_a_valid_spec_and_declares_expectations() -> None:
    from kafka_trial.harness.presets import PRESETS, preset

    for name in PRESETS:
        s = load_spec(None, None, preset(name))
        assert s.name == name
    assert load_spec(None, None, preset("safe")).check.allowed == ()
    assert "duplicate" in load_spec(None, None, preset("no-idempotence-retries")).check.allowed


def test_flags_override_presets() -> None:
    from kafka_trial.harness.presets import preset

    s = load_spec(None, {"producer": {"max_in_flight": 2}}, preset("inflight-reorder"))
    assert s.producer.max_in_flight == 2 and s.producer.idempotence is False


def test_unknown_presets_are_clear_errors() -> None:
    from kafka_trial.harness.presets import preset

    with pytest.raises(TrialError, match="unknown preset"):
        preset("yolo")


def test_transactions_need_idempotence_and_fitting_timeouts() -> None:
    with pytest.raises(TrialError, match="transactions require idempotence"):
        build_spec({"producer": {"transactional": True, "idempotence": False, "acks": "all"}})
    with pytest.raises(TrialError, match="transaction_timeout_ms"):
        build_spec({"producer": {"transactional": True, "delivery_timeout_ms": 90000}})
    assert build_spec({"producer": {"transactional": True}}).producer.transactional


def test_a_storage_fault_needs_the_write_back_filesystem() -> None:
    with pytest.raises(TrialError, match=r"power-loss act on .*set cluster.storage: writeback"):
        build_spec({"nemesis": {"faults": ["kill", "power-loss"]}})
    spec = build_spec({"cluster": {"storage": "writeback"}, "nemesis": {"faults": ["power-loss"]}})
    assert spec.nemesis.faults == ("power-loss",)
    twin = build_spec({"topic": {"flush_messages": 1}})
    assert twin.topic.flush_messages == 1 and build_spec({}).topic.flush_messages is None


def test_a_clock_fault_needs_libfaketime_and_its_settings_are_checked() -> None:
    with pytest.raises(TrialError, match=r"clock act on the brokers' clocks.*faketime"):
        build_spec({"nemesis": {"faults": ["clock"]}})
    spec = build_spec({"cluster": {"clock": "faketime"}, "nemesis": {"faults": ["clock"]}})
    assert spec.nemesis.clock.offsets_s == (120, -120) and spec.nemesis.clock.strobe_ms == 0
    with pytest.raises(TrialError, match="offsets_s"):
        build_spec({"cluster": {"clock": "faketime"}, "nemesis": {"clock": {"offsets_s": []}}})
    with pytest.raises(TrialError, match="kafka_image"):
        build_spec({"cluster": {"clock": "faketime", "kafka_image": "apache/kafka:4.0.0"}})
    with pytest.raises(TrialError, match="strobe_ms=2000 is below 4000"):
        build_spec({"cluster": {"clock": "faketime"}, "nemesis": {"clock": {"strobe_ms": 2000}}})
    with pytest.raises(TrialError, match="corrupt_modes"):
        build_spec({"nemesis": {"corrupt_modes": ["shred"]}})
    kept = build_spec({"topic": {"retention_ms": 600000, "segment_ms": 5000}}).topic
    assert (kept.retention_ms, kept.segment_ms) == (600000, 5000)


def test_every_anomaly_type_has_a_definition_and_a_check() -> None:
    from kafka_trial.checkers.anomalies import ANOMALIES, ANOMALY_TYPES
    from kafka_trial.spark_analysis.checks.runner import CHECKS

    assert len(set(ANOMALY_TYPES)) == len(ANOMALY_TYPES)
    assert all(a.definition and a.unit for a in ANOMALIES.values())
    assert list(CHECKS) == list(ANOMALY_TYPES)


def test_every_example_config_loads() -> None:
    examples = sorted((Path(__file__).parents[2] / "examples").glob("*.yaml"))
    assert len(examples) >= 5
    for path in examples:
        assert load_spec(path, None, None).name == path.stem


def test_every_config_error_at_once_with_its_line_and_a_suggestion(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(
        "seed: 7\nproducer:\n  retriez: 3\n  idempotence: false\ntopic:\n  partitions: -1\n"
        "nemesis:\n  faults: kill-leader\n"
    )
    with pytest.raises(TrialError) as e:
        load_spec(p)
    line = e.value.one_line()
    assert "\n" not in line and "fix:" in line
    assert f"3 bad {p} values" in line
    assert "unknown key producer.retriez (did you mean producer.retries?) (line 3)" in line
    assert "topic.partitions: must be greater than or equal to 1 (line 6)" in line
    assert "nemesis.faults: must be a list (line 8)" in line
    assert "valid tuple" not in line and "Input should" not in line


def test_acks_written_unquoted_in_yaml_is_accepted(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("producer:\n  acks: 1\n  idempotence: false\n")
    assert load_spec(p).producer.acks == "1"
    p.write_text("producer:\n  acks: 0\n  idempotence: false\n")
    assert load_spec(p).producer.acks == "0"
    p.write_text("producer:\n  acks: 2\n  idempotence: false\n")
    with pytest.raises(TrialError) as e:
        load_spec(p)
    assert "producer.acks: must be '0', '1' or 'all' (line 2)" in e.value.one_line()


def test_any_setting_is_a_flag_by_its_dotted_key(capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_trial.harness.cli import _overrides, main, parser

    a = parser().parse_args(
        ["run", "--set", "producer.linger_ms=20", "--set", "nemesis.faults=[pause, kill]",
         "--set", "topic.unclean_leader_election=true", "--acks", "all"]
    )  # fmt: skip
    s = load_spec(None, _overrides(a)[0])
    assert s.producer.linger_ms == 20 and s.nemesis.faults == ("pause", "kill")
    assert s.topic.unclean_leader_election is True
    # A misspelt key is caught before anything starts, with a suggestion.
    assert main(["run", "--set", "producer.lingr_ms=20"]) == 3
    err = capsys.readouterr().err
    assert "unknown key producer.lingr_ms (did you mean producer.linger_ms?)" in err


def test_role_targets_and_topologies_are_flags(capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_trial.harness.cli import _overrides, main, parser

    a = parser().parse_args(
        ["run", "--nemesis", "kill,partition", "--targets", "controller,leader",
         "--topologies", "isolate-controller,halves"]
    )  # fmt: skip
    s = load_spec(None, _overrides(a)[0])
    assert s.nemesis.targets == ("controller", "leader")
    assert s.nemesis.topologies == ("isolate-controller", "halves")
    # An unknown role is refused before anything starts, in one line with the roles.
    assert main(["run", "--targets", "contoller"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown target role contoller; choose from" in err[0], err


def test_one_broker_setting_keeps_the_harness_defaults(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("cluster:\n  broker_config:\n    replica.lag.time.max.ms: 3000\n")
    got = load_spec(path, {}).cluster.broker_config
    assert got["replica.lag.time.max.ms"] == "3000"
    assert {k: v for k, v in got.items() if k != "replica.lag.time.max.ms"} == {
        k: v for k, v in RunSpec().cluster.broker_config.items() if k != "replica.lag.time.max.ms"
    }


def test_further_librdkafka_settings_reach_the_client_under_the_owned_ones() -> None:
    conf = load_spec(None, {"producer": {"librdkafka": {"socket.max.fails": 0}}}).producer
    assert conf.client_config()["socket.max.fails"] == 0
    assert conf.client_config()["acks"] == "all"
