"""The application on trial as a workload: its instances are real processes of tiny
commands (sleep, sh), started, killed, restarted and stopped as a run would; the id
rule, the spec and the flags; what `kafka-trial cleanup` finds after the harness was
SIGKILLed. The one session with Kafka clients runs on librdkafka's mock cluster
(plumbing only, never a stand-in for Kafka under faults)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.app_contract import APPS
from kafka_trial.contracts.client_processes import process_state
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.group_ids import GROUP_IDS
from kafka_trial.contracts.history import HistoryWriter, read_history
from kafka_trial.contracts.ops import Op
from kafka_trial.harness.spec import build_spec, load_spec
from kafka_trial.workloads.app import AppWorkload
from kafka_trial.workloads.app_groups import kill_leftover_apps
from kafka_trial.workloads.app_ids import decimal_id, id_parser
from kafka_trial.workloads.app_process import substitute
from kafka_trial.workloads.base import ClientContext, Lane
from kafka_trial.workloads.plan import plan_workloads
from kafka_trial.workloads.settings import AppSpec, ProducerSpec


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The pointers cleanup reads go to a directory of the test's own."""
    from kafka_trial.cluster import host

    cache = tmp_path / "cache"
    monkeypatch.setattr(host, "CACHE", cache)
    yield cache
    assert APPS.live() == [], "a test left an instance registered"


def gone(pid: int) -> bool:
    """No process (or only a zombie nobody reaped yet) has this pid."""
    return process_state(pid) in (None, "Z")


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return all(gone(int(p.name)) for p in Path("/proc").iterdir() if _in_group(p, pgid))


def _in_group(p: Path, pgid: int) -> bool:
    if not p.name.isdigit():
        return False
    try:
        stat = (p / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[2] == str(pgid)


def wait_for(cond: Callable[[], bool], within_s: float = 10) -> None:
    deadline = time.monotonic() + within_s
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def app(
    tmp_path: Path, command: str, **kw: object
) -> tuple[AppWorkload, ClientContext, HistoryWriter]:
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    ctx = ClientContext(history, lambda k: f"127.0.0.1:{9000 + k}", run_id="t1", run_dir=tmp_path)
    settings = {"start_check_s": 0.3, "restart_delay_s": 0.1, **kw}
    spec = AppSpec(command=command, guarantee="at-least-once", **settings)  # type: ignore[arg-type]
    return AppWorkload(spec, TopicSpec(name="in")), ctx, history


def ops_of(history: HistoryWriter) -> list[Op]:
    history.flush()
    return list(read_history(history.path).ops)


def app_ops(history: HistoryWriter) -> list[tuple[str, str, str]]:
    return [
        (str(o.process), o.f, o.type) for o in ops_of(history) if str(o.process).startswith("app-")
    ]


# --- the command: placeholders, environment, output files --------------------------------


def test_placeholders_are_replaced_and_the_shells_own_expansion_is_left() -> None:
    values = {"INPUT_TOPIC": "in", "GROUP_ID": "g"}
    cmd = "app --in {INPUT_TOPIC} --g={GROUP_ID} ${INPUT_TOPIC} {OTHER} awk '{print $1}'"
    assert substitute(cmd, values) == "app --in in --g=g ${INPUT_TOPIC} {OTHER} awk '{print $1}'"


def test_each_instance_gets_its_environment_and_files_of_its_own(tmp_path: Path) -> None:
    cmd = (
        "echo boot={KAFKA_BOOTSTRAP_SERVERS} id={INSTANCE_ID} "
        "env=$KAFKA_BOOTSTRAP_SERVERS,$INPUT_TOPIC,$OUTPUT_TOPIC,$GROUP_ID,$INSTANCE_ID,$EXTRA; "
        "echo complaint >&2; sleep 30"
    )
    w, ctx, history = app(tmp_path, cmd, instances=2, env={"EXTRA": "x"})
    # The lanes after the other workloads' (here 5 and 6), one per instance.
    lanes = iter(range(5, 7))
    assert w.workers(ctx, lambda: Lane.of(ctx, next(lanes))) == []
    try:
        w.start(ctx)
        wait_for(lambda: "\nboot=" in (tmp_path / "app" / "instance-1.out").read_text())
        for i, port in ((0, 9005), (1, 9006)):
            out = (tmp_path / "app" / f"instance-{i}.out").read_text()
            env = f"127.0.0.1:{port},in,in-out,kafka-trial-app-t1,{i},x"
            assert f"\nboot=127.0.0.1:{port} id={i} env={env}\n" in out
            assert "complaint" in (tmp_path / "app" / f"instance-{i}.err").read_text()
        assert [a.index for a in APPS.live()] == [0, 1]
        # The group-coordinator role aims by the app's group while it runs.
        assert ("kafka-trial-app-t1", "app") in GROUP_IDS.live()
    finally:
        w.close()
    assert ("kafka-trial-app-t1", "app") not in GROUP_IDS.live()
    assert app_ops(history) == [
        ("app-0", "app-start", "invoke"),
        ("app-0", "app-start", "ok"),
        ("app-1", "app-start", "invoke"),
        ("app-1", "app-start", "ok"),
        ("app-0", "app-exit", "invoke"),
        ("app-0", "app-exit", "ok"),
        ("app-1", "app-exit", "invoke"),
        ("app-1", "app-exit", "ok"),
    ]
    exits = [o.value for o in ops_of(history) if o.f == "app-exit" and o.type == "ok"]
    assert [(e["instance"], e["by"], e["exit_code"], e["stderr_tail"]) for e in exits] == [
        (0, "harness", -9, "complaint"),
        (1, "harness", -9, "complaint"),
    ]


# --- the supervisor --------------------------------------------------------------------


def test_a_killed_instance_is_recorded_by_its_killer_and_started_again(tmp_path: Path) -> None:
    w, ctx, history = app(tmp_path, "sleep 30", instances=1)
    try:
        w.start(ctx)
        (first,) = APPS.live()
        seen = first.kill("app-kill")
        assert seen == {"instance": 0, "pid": seen["pid"], "state": "S", "killed": True}
        wait_for(lambda: [a.describe()["pid"] for a in APPS.live()] not in ([], [seen["pid"]]))
    finally:
        w.close()
    ops = [o for o in ops_of(history) if o.type == "ok"]
    assert [o.f for o in ops] == ["app-start", "app-exit", "app-start", "app-exit"]
    assert ops[1].value == {
        "instance": 0,
        "pid": seen["pid"],
        "exit_code": -9,
        "by": "app-kill",
        "stderr_tail": "",
    }
    assert ops[2].value["pid"] != seen["pid"]
    assert ops[3].value["by"] == "harness"
    assert w.summary()["exits"] == {"app-kill": 1, "harness": 1}


def test_an_instance_that_ends_itself_is_restarted_until_it_loops(tmp_path: Path) -> None:
    w, ctx, history = app(
        tmp_path, "sleep 0.4; echo 'lost the broker' >&2; exit 3", instances=1, start_check_s=0.1
    )
    try:
        w.start(ctx)
        wait_for(lambda: w.supervisor is not None and w.supervisor.crash_looped == [0], 20)
    finally:
        w.close()
    exits = [o.value for o in ops_of(history) if o.f == "app-exit" and o.type == "ok"]
    assert len(exits) == 5
    assert all(e["by"] == "itself" and e["exit_code"] == 3 for e in exits)
    assert all(e["stderr_tail"] == "lost the broker" for e in exits)
    assert [e.get("crash_loop") for e in exits] == [None] * 4 + [True]
    assert w.summary()["crash_looped"] == [0] and w.summary()["starts"] == 5


def test_the_final_stop_is_graceful_then_forced(tmp_path: Path) -> None:
    # Instance 0 ends on SIGTERM; instance 1 ignores it and is killed after the grace.
    cmd = '[ "$INSTANCE_ID" = 1 ] && trap "" TERM; sleep 30 & wait; sleep 30'
    w, ctx, history = app(tmp_path, cmd, instances=2, stop_grace_s=0.5)
    try:
        w.start(ctx)
        pids = [a.describe()["pid"] for a in APPS.live()]
        assert w.supervisor is not None
        t0 = time.monotonic()
        w.supervisor.stop(w.spec.stop_grace_s)
        assert time.monotonic() - t0 < 5
    finally:
        w.close()
    exits = [o.value for o in ops_of(history) if o.f == "app-exit" and o.type == "ok"]
    assert [(e["by"], e["exit_code"]) for e in exits] == [("harness", -15), ("harness", -9)]
    assert all(group_gone(p) for p in pids)


def test_a_paused_group_shows_it_and_resumes(tmp_path: Path) -> None:
    w, ctx, _ = app(tmp_path, "sleep 30", instances=1)
    try:
        w.start(ctx)
        (inst,) = APPS.live()
        paused = APPS.pause(inst)
        assert paused["state"] == "T"
        assert APPS.heal_all() == {"resumed": [0], "restored": []}
        assert process_state(inst.describe()["pid"]) in ("S", "R")
    finally:
        w.close()


def test_an_app_that_exits_at_once_is_refused_and_nothing_keeps_running(tmp_path: Path) -> None:
    cmd = 'if [ "$INSTANCE_ID" = 0 ]; then echo "no such broker" >&2; exit 1; fi; sleep 30'
    w, ctx, history = app(tmp_path, cmd, instances=2, start_check_s=2)
    with pytest.raises(TrialError) as e:
        w.start(ctx)
    line = e.value.one_line()
    assert "app instance 0 exited at once (exit code 1): no such broker -- fix: run " in line
    assert str(tmp_path / "app" / "instance-0.err") in line and "\n" not in line
    starts = [o.value for o in ops_of(history) if o.f == "app-start" and o.type == "ok"]
    assert len(starts) == 2 and all(group_gone(s["pid"]) for s in starts)
    assert not list((tmp_path / "cache" / "app-runs").glob("*"))
    w.close()  # the runner's teardown closes again: nothing happens twice
    assert len([o for o in ops_of(history) if o.f == "app-exit" and o.type == "ok"]) == 2


class Refusing:
    """An instance runner whose every start fails, as a missing image's does."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def start(self, index: int, lane: Lane, env: dict[str, str], logs: object) -> object:
        raise self.error


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (
            TrialError("image shop/app:1 is not in the local Docker engine", "build it first"),
            "kafka-trial: image shop/app:1 is not in the local Docker engine -- fix: build it",
        ),
        (OSError("no shell"), "kafka-trial: app instance 0 did not start: no shell -- fix: run "),
    ],
)
def test_an_instance_that_cannot_start_is_refused_with_why(
    tmp_path: Path, error: Exception, line: str
) -> None:
    history = HistoryWriter(tmp_path / "history.jsonl", flush_s=0)
    ctx = ClientContext(history, lambda k: "b", run_id="t1", run_dir=tmp_path)
    spec = AppSpec(image="shop/app:1", guarantee="exactly-once", instances=1)
    w = AppWorkload(spec, TopicSpec(name="in"), runner=Refusing(error))  # type: ignore[arg-type]
    with pytest.raises(TrialError) as e:
        w.start(ctx)
    assert e.value.one_line().startswith(line)
    (failed,) = [o for o in ops_of(history) if o.f == "app-start" and o.type == "fail"]
    assert failed.value == {"instance": 0} and str(error) in (failed.error or "")


def test_a_container_instance_is_seen_as_the_supervisor_needs(tmp_path: Path) -> None:
    """cluster/app_containers.AppContainer's own shape, adapted: `ended_by` is its
    attribute, its stderr tail a block of lines, remove() its end."""
    from kafka_trial.workloads.app import ContainerInstance

    class Container:
        ended_by: str | None = None
        removed = False
        live = True

        def describe(self) -> dict[str, object]:
            return {"instance": 1, "container": "c0ffee"}

        def running(self) -> bool:
            return self.live

        def exit_code(self) -> int | None:
            return None if self.live else 137

        def kill(self, by: str) -> dict[str, object]:
            self.ended_by, self.live = by, False
            return {"state": "running", "after": "exited"}

        def stderr_tail(self) -> str:
            return "starting\nlost the broker\n\n"

        def remove(self) -> None:
            self.removed = True

    c = Container()
    inst = ContainerInstance(c, 1)
    assert inst.kill("app-kill") == {
        "instance": 1,
        "container": "c0ffee",
        "state": "running",
        "after": "exited",
    }
    assert (inst.ended_by(), inst.exit_code(), inst.stderr_tail()) == (
        "app-kill",
        137,
        "lost the broker",
    )
    inst.close()
    assert c.removed


def test_close_on_an_interrupted_run_leaves_no_process(tmp_path: Path) -> None:
    """SIGTERM or an error: the history may be closed first, and the shell may have
    started children of its own; close() still ends the whole group."""
    w, ctx, history = app(tmp_path, "sleep 30 & sleep 30 & wait", instances=2)
    w.start(ctx)
    pids = [a.describe()["pid"] for a in APPS.live()]
    wait_for(
        lambda: all(len([p for p in Path("/proc").iterdir() if _in_group(p, g)]) == 3 for g in pids)
    )
    history.close()
    w.close()
    assert all(group_gone(p) for p in pids)
    book = json.loads((tmp_path / "app" / "instances.json").read_text())
    assert [g["pgid"] for g in book["groups"]] == pids
    assert all(g["ended"] is not None for g in book["groups"])


def test_the_cluster_gone_ends_the_app(tmp_path: Path) -> None:
    w, ctx, _ = app(tmp_path, "sleep 30", instances=1)
    try:
        w.start(ctx)
        (inst,) = APPS.live()
        ctx.abort.set()
        wait_for(lambda: group_gone(inst.describe()["pid"]))
        assert APPS.live() == []
    finally:
        w.close()


# --- kafka-trial cleanup after a SIGKILLed harness -------------------------------------

HARNESS = """
import sys, time
from pathlib import Path
from kafka_trial.cluster import host
host.CACHE = Path(sys.argv[1])
from kafka_trial.cluster.settings import TopicSpec
from kafka_trial.contracts.app_contract import APPS
from kafka_trial.contracts.history import HistoryWriter
from kafka_trial.workloads.app import AppWorkload
from kafka_trial.workloads.base import ClientContext, Lane
from kafka_trial.workloads.settings import AppSpec
run = Path(sys.argv[2])
ctx = ClientContext(HistoryWriter(run / "history.jsonl"), lambda k: "x", run_id="dead", run_dir=run)
spec = AppSpec(command="sleep 60 & sleep 60", guarantee="exactly-once", start_check_s=0.2)
AppWorkload(spec, TopicSpec(name="in")).start(ctx)
print(" ".join(str(a.describe()["pid"]) for a in APPS.live()), flush=True)
time.sleep(60)
"""


def test_cleanup_kills_the_groups_a_sigkilled_harness_left(tmp_path: Path, _cache: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(_cache), str(run)], stdout=subprocess.PIPE, text=True
    )
    assert harness.stdout is not None
    pids = [int(p) for p in harness.stdout.readline().split()]
    try:
        assert len(pids) == 2 and not any(group_gone(p) for p in pids)
        # Its harness alive, a run's groups are its own: cleanup leaves them.
        assert kill_leftover_apps() == 0
        harness.send_signal(signal.SIGKILL)
        harness.wait(10)
        assert not any(group_gone(p) for p in pids), "the instances outlive their harness"
        assert kill_leftover_apps() == 2
        wait_for(lambda: all(group_gone(p) for p in pids))
        assert not list((_cache / "app-runs").glob("*"))
        assert kill_leftover_apps() == 0
    finally:
        harness.kill()
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p, signal.SIGKILL)


def test_cleanup_spares_a_group_that_is_not_the_apps(tmp_path: Path, _cache: Path) -> None:
    """A recorded group id whose group is gone may be reused by another program."""
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        book = tmp_path / "instances.json"
        entry = {"instance": 0, "pgid": other.pid, "command": "python app.py", "marker": "r-0"}
        book.write_text(json.dumps({"groups": [{**entry, "ended": None}]}))
        (_cache / "app-runs").mkdir(parents=True)
        pointer = {"instances": str(book), "owner_pid": 999_999_999, "host": "elsewhere"}
        (_cache / "app-runs" / "r-1.json").write_text(json.dumps(pointer))
        assert kill_leftover_apps() == 0
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


# --- the id rule -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "want"),
    [(b"42", 42), (b" 42\n", 42), (b"-3", -3), (b"1_000", None), (b"4.0", None), (b"x", None),
     (b"", None), (None, None), ("٣".encode(), None)],
)  # fmt: skip
def test_the_default_id_is_the_whole_value_in_decimal(raw: bytes | None, want: int | None) -> None:
    assert decimal_id(raw) == want


@pytest.mark.parametrize(
    ("raw", "want"),
    [(b'{"meta": {"id": 7}}', 7), (b'{"meta": {"id": "8"}}', 8), (b'{"meta": {"id": true}}', None),
     (b'{"meta": {"id": 1.5}}', None), (b'{"meta": {}}', None), (b'{"meta": 3}', None),
     (b"[1]", None), (b"not json", None), (b"\xff", None), (None, None)],
)  # fmt: skip
def test_a_json_field_path(raw: bytes | None, want: int | None) -> None:
    assert id_parser(id_json="meta.id")(raw) == want


@pytest.mark.parametrize(
    ("raw", "want"),
    [(b"order 12 of id=34 done", 34), (b"id=x", None), (b"nothing", None), (None, None)],
)
def test_a_regex_group(raw: bytes | None, want: int | None) -> None:
    assert id_parser(id_regex=r"id=(\w+)")(raw) == want


# --- the spec and the flags -------------------------------------------------------------


@pytest.mark.parametrize(
    ("app", "more", "needle"),
    [
        ({"command": "x"}, {}, "set --app-guarantee (app.guarantee) to exactly-once"),
        ({"command": "x", "guarantee": "maybe"}, {}, "app.guarantee: must be 'exactly-once'"),
        (
            {"command": "x", "image": "y", "guarantee": "exactly-once"},
            {},
            "app.command and app.image are both set",
        ),
        (
            {"command": "x", "guarantee": "exactly-once"},
            {"copier": {"workers": 1}},
            "the app and copier.workers both write trial-out",
        ),
        ({}, {"nemesis": {"faults": ["app-kill"]}}, "nemesis.faults app-kill act on the app"),
        ({"command": "x", "guarantee": "exactly-once", "id_regex": "id"}, {}, "capture group"),
        ({"command": "x", "guarantee": "exactly-once", "id_json": "a..b"}, {}, "dotted field"),
        (
            {"command": "x", "guarantee": "exactly-once", "env": {"GROUP_ID": "g"}},
            {},
            "app.env sets GROUP_ID",
        ),
        ({"command": "x", "guarantee": "exactly-once", "instances": 0}, {}, "app.instances"),
        (
            {"command": "x", "guarantee": "exactly-once"},
            {"nemesis": {"faults": ["app-partition"]}},
            "set cluster.client_lanes: 5",
        ),
    ],
)
def test_bad_app_settings_give_one_clear_line(app: dict, more: dict, needle: str) -> None:
    with pytest.raises(TrialError) as e:
        build_spec({"app": app, **more})
    line = e.value.one_line()
    assert needle in line and "fix:" in line and "\n" not in line


def test_an_app_run_keys_each_value_by_its_partition() -> None:
    spec = build_spec({"app": {"command": "x", "guarantee": "exactly-once"}})
    assert spec.producer.partition_keys and spec.app.present
    assert build_spec(json.loads(spec.to_json())) == spec  # spec.json reads back the same
    assert not build_spec({}).producer.partition_keys
    with pytest.raises(TrialError, match=r"remove producer\.keyed"):
        build_spec(
            {"app": {"command": "x", "guarantee": "exactly-once"}, "producer": {"keyed": True}}
        )
    with pytest.raises(ValueError, match="set one of them"):
        ProducerSpec(keyed=True, partition_keys=True)


def test_the_app_flags_become_the_spec() -> None:
    from kafka_trial.harness.cli import _overrides, parser

    a = parser().parse_args(
        ["run", "--app-command", "python app.py", "--app-guarantee", "at-most-once",
         "--app-instances", "3"]
    )  # fmt: skip
    over, typed = _overrides(a)
    spec = load_spec(None, over, typed=typed)
    assert (spec.app.command, spec.app.guarantee, spec.app.instances) == (
        "python app.py",
        "at-most-once",
        3,
    )
    b = parser().parse_args(["run", "--app-image", "shop/app:1", "--app-guarantee", "exactly-once"])
    assert load_spec(None, _overrides(b)[0]).app.image == "shop/app:1"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--app-guarantee", "maybe"], "--app-guarantee (app.guarantee): must be 'exactly-once'"),
        ([], "set --app-guarantee (app.guarantee)"),
        (["--app-guarantee", "exactly-once", "--app-image", "i"], "--app-command (app.command)"),
    ],
)
def test_a_bad_app_flag_is_one_line_and_exit_3(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from kafka_trial.harness.cli import main

    argv = ["--progress", "off", "run", "--runs-dir", str(tmp_path / "runs"), "--app-command", "x"]
    assert main([*argv, *args]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "fix:" in err[0], err
    assert not (tmp_path / "runs").exists()  # refused before anything started


def test_the_plan_puts_the_app_last_and_keys_by_partition() -> None:
    topic = TopicSpec(name="t")
    spec = AppSpec(command="x", guarantee="exactly-once")
    planned = plan_workloads(topic, ProducerSpec(), app=spec)
    assert [w.name for w in planned] == ["producer", "app"]
    assert planned[0].spec.partition_keys  # type: ignore[attr-defined]
    assert [t.name for t in planned[1].topics()] == ["t-out"]
    assert [w.name for w in plan_workloads(topic, ProducerSpec(), app=AppSpec())] == ["producer"]


# --- a session with the app, on librdkafka's mock cluster -------------------------------

# An at-least-once copier: output value = input value, committed after the flush. It
# writes "badkey" when a record's key is not its partition (the producers' contract).
COPIER = """
import os, signal, sys
from confluent_kafka import Consumer, KafkaException, Producer
env = os.environ
c = Consumer({"bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"], "group.id": env["GROUP_ID"],
              "auto.offset.reset": "earliest", "enable.auto.commit": False,
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
p = Producer({"bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"]})
c.subscribe([env["INPUT_TOPIC"]])
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    msgs = c.consume(100, 0.2)
    good = [m for m in msgs if m.error() is None]
    for m in good:
        ok = m.key() == str(m.partition()).encode()
        p.produce(env["OUTPUT_TOPIC"], value=m.value() if ok else b"badkey", key=m.key())
    if good:
        p.flush()
        try:
            c.commit(asynchronous=False)
        except KafkaException as e:  # a rebalance: the records come again (at least once)
            print(e, file=sys.stderr)
"""


@pytest.fixture
def mock_boot() -> Iterator[str]:
    from confluent_kafka import Producer

    holder = Producer({"test.mock.num.brokers": 1, "log_level": 0})
    md = holder.list_topics(timeout=10)
    for name in ("apin", "apin-out"):
        holder.list_topics(name, timeout=10)
    yield ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
    holder.flush(1)


def test_a_session_runs_the_app_waits_for_it_and_drains_its_output(
    tmp_path: Path, mock_boot: str
) -> None:
    from kafka_trial.workloads.session import WorkloadSession
    from kafka_trial.workloads.settings import DrainSpec

    (tmp_path / "copier.py").write_text(textwrap.dedent(COPIER))
    spec = AppSpec(
        command=f"exec {sys.executable} {tmp_path / 'copier.py'}",
        guarantee="at-least-once",
        instances=2,
        quiet_s=5,
        catch_up_s=60,
        start_check_s=1,
    )
    history = HistoryWriter(tmp_path / "history.jsonl")
    ctx = ClientContext(history, lambda _k: mock_boot, run_id="m1", run_dir=tmp_path)
    topic = TopicSpec(name="apin", partitions=4)
    producer = ProducerSpec(clients=1, batch=5, target_rate=300)
    session = WorkloadSession(plan_workloads(topic, producer, app=spec), ctx)
    try:
        session.start()
        time.sleep(3)
        session.stop()
        summary = session.finish(DrainSpec(timeout_s=30, settle_s=1))
    finally:
        session.close()
    history.close()
    ops = list(read_history(history.path).ops)
    (caught,) = [o.value for o in ops if o.f == "app-caught-up" and o.type == "ok"]
    assert caught["caught_up"] and caught["how"] == "lag", caught
    assert set(caught["lag"]) == {"0", "1", "2", "3"} and not any(caught["lag"].values())
    (offsets,) = [o.value[0] for o in ops if o.f == "group-offsets" and o.type == "ok"]
    assert offsets["role"] == "app" and offsets["group"] == "kafka-trial-app-m1"
    sent = {m["value"] for o in ops if o.f == "send" and o.type != "invoke" for m in o.value
            if m["outcome"] == "ok"}  # fmt: skip
    roles: dict[str, set[str]] = {}
    out_values: list[int | None] = []
    for o in ops:
        if o.f == "poll" and o.type == "ok":
            m = o.value[0]
            for r in m.get("records") or []:
                roles.setdefault(r["topic"], set()).add(m["role"])
                if m["role"] == "app-output":
                    out_values.append(r["value"])
    # Each topic drained once, by its owner's rule; every input reached the output.
    assert roles == {"apin": {"drain"}, "apin-out": {"app-output"}}
    assert None not in out_values and set(out_values) == sent and sent
    exits = [o.value for o in ops if o.f == "app-exit" and o.type == "ok"]
    assert [(e["instance"], e["by"], e["exit_code"]) for e in exits] == [
        (0, "harness", 0),
        (1, "harness", 0),
    ]
    assert list(summary.drains) == ["apin", "apin-out"] and summary.complete
    app_summary = session.summaries()["app"]
    assert app_summary["caught_up"] == caught and app_summary["exits"] == {"harness": 2}
