"""kafka-trial: run | campaign | analyze | finish | report | presets | heal | cleanup | images."""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import functools
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import yaml
from kafka_trial.checkers.anomalies import ANOMALY_TYPES
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.schedule import Step, read_schedule
from kafka_trial.harness.presets import PRESETS
from kafka_trial.nemesis.catalog import PACKAGES, ROLE_PACKAGES, ROLES, TOPOLOGIES

from kafka_trial import __version__

# Spec flags: (argparse dest, the config key it sets, the flag as typed). Error
# messages name the flag a user typed, not the key it became.
_SPEC_FLAGS = (
    ("name", "name", "--name"),
    ("seed", "seed", "--seed"),
    ("duration", "duration_s", "--duration"),
    ("runs_dir", "runs_dir", "--runs-dir"),
    ("kafka_version", "cluster.kafka_version", "--kafka-version"),
    ("kafka_image", "cluster.kafka_image", "--kafka-image"),
    ("partitions", "topic.partitions", "--partitions"),
    ("replication_factor", "topic.replication_factor", "--replication-factor"),
    ("min_isr", "topic.min_insync_replicas", "--min-isr"),
    ("unclean", "topic.unclean_leader_election", "--unclean"),
    ("acks", "producer.acks", "--acks"),
    ("idempotence", "producer.idempotence", "--idempotence"),
    ("retries", "producer.retries", "--retries"),
    ("max_in_flight", "producer.max_in_flight", "--max-in-flight"),
    ("workers", "producer.clients", "--clients"),
    ("spark_master", "check.spark_master", "--spark-master"),
    ("app_command", "app.command", "--app-command"),
    ("app_image", "app.image", "--app-image"),
    ("app_guarantee", "app.guarantee", "--app-guarantee"),
    ("app_instances", "app.instances", "--app-instances"),
)


def _overrides(a: argparse.Namespace) -> tuple[dict[str, Any], dict[str, str]]:
    """The flags as config overrides, and for each key set the flag that set it."""
    o: dict[str, Any] = {}
    typed: dict[str, str] = {}

    def put(path: str, value: Any, flag: str) -> None:
        if value is None:
            return
        d = o
        *parents, leaf = path.split(".")
        for k in parents:
            d = d.setdefault(k, {})
        d[leaf] = value
        typed[path] = flag

    for dest, path, flag in _SPEC_FLAGS:
        put(path, getattr(a, dest), flag)
    if a.rate is not None:
        put("producer.target_rate", None if a.rate == "unlimited" else a.rate, "--rate")
    if a.nemesis is not None:
        faults = [x for x in a.nemesis.split(",") if x] if a.nemesis != "none" else []
        put("nemesis.faults", faults, "--nemesis")
    for flag, path in (("targets", "nemesis.targets"), ("topologies", "nemesis.topologies")):
        if getattr(a, flag, None) is not None:
            put(path, [x for x in getattr(a, flag).split(",") if x], f"--{flag}")
    if a.allow is not None:
        put("check.allowed", [x for x in a.allow.split(",") if x], "--allow")
    for item in a.set or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise TrialError(
                f"--set {item!r} is not KEY=VALUE", "write e.g. --set producer.linger_ms=20"
            )
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        put(key.strip(), value, f"--set {key.strip()}")
    _cluster_elsewhere(a, o, put)
    return o, typed


def _cluster_elsewhere(a: argparse.Namespace, o: dict[str, Any], put: Any) -> None:
    """--inventory and --bootstrap: a cluster kafka-trial did not build, its size read
    from the inventory, or asked of the address (which must answer, before anything)."""
    inventory, bootstrap = getattr(a, "inventory", None), getattr(a, "bootstrap", None)
    if inventory and bootstrap:
        raise TrialError("--inventory and --bootstrap both name the cluster", "give one of them")
    if getattr(a, "keep_topics", False):
        put("cluster.keep_topics", True, "--keep-topics")
    if inventory:
        from kafka_trial.cluster.inventory import load_inventory

        inv = load_inventory(inventory)
        put("cluster.kind", "ssh", "--inventory")
        put("cluster.inventory", str(Path(inventory).resolve()), "--inventory")
        put("cluster.brokers", len(inv.nodes), "--inventory")
    elif bootstrap:
        from kafka_trial.cluster.bootstrap_cluster import answering_brokers
        from kafka_trial.cluster.settings import ClientSpec

        client = ClientSpec.model_validate(o.get("client", {})).librdkafka()
        put("cluster.kind", "bootstrap", "--bootstrap")
        put("cluster.bootstrap", bootstrap, "--bootstrap")
        put("cluster.brokers", len(answering_brokers(bootstrap, client)), "--bootstrap")


def _load_spec(a: argparse.Namespace) -> Any:
    from kafka_trial.harness.presets import preset
    from kafka_trial.harness.spec import load_spec

    over, typed = _overrides(a)
    return load_spec(a.config, over, preset(a.preset) if a.preset else None, typed=typed)


def _rate(s: str) -> int | str:
    if s == "unlimited":
        return s
    try:
        return int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number or unlimited, got {s!r}"
        ) from None


def _bool(s: str) -> bool:
    if s.lower() in ("1", "true", "yes", "on"):
        return True
    if s.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {s!r}")


def _junit_path(a: argparse.Namespace) -> Path | None:
    return Path(a.junitxml) if getattr(a, "junitxml", None) else None


def _cmd_run(a: argparse.Namespace) -> int:
    from kafka_trial.harness.runner import new_run_dir, run

    if a.until_fail is not None:
        return _run_until_fail(a)
    spec = _load_spec(a)
    run_dir = new_run_dir(spec)
    early = None
    if not a.no_analyze:
        from kafka_trial.spark_analysis.job import start_analysis_early

        # The JVM starts while the heal and drain mostly wait, not after them.
        early = functools.partial(start_analysis_early, run_dir, a.spark_master, one_shot=True)
    outcome = run(spec, run_dir, on_final_heal=early)
    phases = ", ".join(f"{k} {v:.1f}s" for k, v in outcome.phase_s.items())
    print(
        f"run: {outcome.ops} send ops at {outcome.ops_per_s:.0f}/s, "
        f"{outcome.values_acked_per_s:.0f} values acknowledged/s; phases: {phases}"
    )
    if a.no_analyze:
        print(f"run dir: {run_dir}")
        return 0
    from kafka_trial.report.judge import judge

    judged = judge(run_dir, spark_master=a.spark_master, junit=_junit_path(a), one_shot=True)
    return judged.exit_code


def _run_until_fail(a: argparse.Namespace) -> int:
    from kafka_trial.harness.until_fail import check_limit, run_until_fail

    check_limit(a.until_fail)
    if a.no_analyze:
        raise TrialError(
            "--until-fail needs each run's verdict, and --no-analyze skips it",
            "drop --no-analyze (or --until-fail)",
        )
    spec = _load_spec(a)
    return run_until_fail(spec, a.until_fail, a.spark_master, _junit_path(a))


def _cmd_campaign(a: argparse.Namespace) -> int:
    from kafka_trial.harness import campaign as cp
    from kafka_trial.harness.until_fail import check_limit

    if a.until_fail is not None:
        check_limit(a.until_fail)
        if a.resume:
            raise TrialError(
                "--resume goes on with the saved campaign's own --until-fail",
                "drop --until-fail (or --resume, to start a new hunt)",
            )
    if a.resume:
        camp_dir = Path(a.resume)
        saved = camp_dir / cp.CAMPAIGN_FILE
        if not saved.is_file():
            raise TrialError(f"{saved} is missing", "pass a directory `campaign` wrote")
        spec = cp.CampaignSpec.model_validate(json.loads(saved.read_text())["spec"])
    else:
        spec = _campaign_spec(a)
        camp_dir = cp.new_campaign_dir(Path(a.runs_dir), spec.name)
    print(f"campaign: {camp_dir}")
    return cp.execute(spec, camp_dir, bool(a.resume), a.spark_master, _junit_path(a))


def _campaign_spec(a: argparse.Namespace) -> Any:
    from kafka_trial.harness import campaign as cp

    over: dict[str, Any] = {}
    if a.presets:
        over["presets"] = [x for x in a.presets.split(",") if x]
    if a.configs:
        over["configs"] = [str(Path(x).resolve()) for x in a.configs.split(",") if x]
    if a.nemesis is not None:
        over["nemesis"] = [x if x != "none" else "" for x in a.nemesis.split(";")]
    if a.seeds is not None:
        over["seeds"] = a.seeds
    if a.kafka_version:
        over["kafka_versions"] = [x for x in a.kafka_version.split(",") if x]
    if a.duration is not None:
        over["duration_s"] = a.duration
    if a.fresh_clusters:
        over["reuse_clusters"] = False
    if a.serial_analysis:
        over["overlap_analysis"] = False
    if a.until_fail is not None:
        over["until_fail"] = a.until_fail
    spec = cp.load_campaign(a.config, over)
    origin = Path(a.config).resolve() if a.config else None
    # Config files are found from the campaign file; saved absolute, so --resume can.
    spec = spec.model_copy(
        update={"configs": tuple(str(cp.config_path(c, origin)) for c in spec.configs)}
    )
    cp.entries(spec, origin)  # every run's config is checked before anything starts
    return spec


def _cmd_analyze(a: argparse.Namespace) -> int:
    from kafka_trial.report.judge import judge

    out = Path(a.out) if getattr(a, "out", None) else None
    judged = judge(
        a.run_dir, spark_master=a.spark_master, out_dir=out, junit=_junit_path(a), one_shot=True
    )
    assert judged.results is not None
    facts = judged.results.analysis
    print(f"analysis took {facts.total_s:.1f}s (spark session {facts.session_s:.1f}s)")
    return judged.exit_code


def _cmd_finish(a: argparse.Namespace) -> int:
    from kafka_trial.harness.finish import finish_run
    from kafka_trial.harness.runner import signals_interrupt

    run_dir = Path(a.run_dir)
    if not a.no_analyze and run_dir.is_dir():
        from kafka_trial.spark_analysis.job import start_analysis_early

        start_analysis_early(run_dir, a.spark_master, one_shot=True)  # during the drain
    with signals_interrupt():
        info = finish_run(run_dir, keep_cluster=a.keep_cluster)
    done = info["finished_by"]
    print(
        f"finished {run_dir.name}: {done['ops_completed_info']} open ops completed info, "
        f"drain complete: {info['drain']['complete']}"
        + ("" if a.keep_cluster else "; cluster removed")
    )
    if a.no_analyze:
        return 0
    return _cmd_analyze(a)


def _cmd_report(a: argparse.Namespace) -> int:
    from kafka_trial.report.judge import judge

    run_dir = Path(a.run_dir)
    if not run_dir.is_dir():
        raise TrialError(f"{run_dir} is not a directory", "pass a run directory")
    judged = judge(run_dir, spark_master=a.spark_master, reuse=not a.reanalyze, one_shot=True)
    return judged.exit_code


def _cmd_presets(a: argparse.Namespace) -> int:
    from kafka_trial.checkers.claims import CLAIMS
    from kafka_trial.harness.presets import PRESET_WORDS
    from kafka_trial.harness.spec import build_spec
    from kafka_trial.nemesis.schedule import min_duration_s

    print(
        "Start here: `kafka-trial run --preset safe` puts the recommended settings on "
        "trial (claim C4: it should pass); `--preset acks1` shows a loss the report "
        "explains (C2). Every preset runs 60 s of faults unless --duration says otherwise.\n"
    )
    for name, data in PRESETS.items():
        claim = CLAIMS.get(name)
        settings, faults = PRESET_WORDS[name]
        nemesis = build_spec(dict(data), source=name).nemesis
        allowed = ", ".join(data.get("check", {}).get("allowed", [])) or "nothing"
        print(f"{name}")
        if claim is not None:
            print(f"  claim {claim.id}: {claim.text}")
            print(f"  expect: {claim.expectation()}")
        print(f"  settings: {settings}")
        print(f"  faults: {faults}")
        if nemesis.faults:
            packages = ", ".join(nemesis.faults)
            print(
                f"  fault packages: {packages}; every one fires in --duration "
                f"{min_duration_s(nemesis):g} or more"
            )
        print(f"  allowed: {allowed}")
    return 0


_RUN_DIR_FIX = "pass a run directory `kafka-trial run` wrote (runs/latest is the newest)"


def _run_dir_json(run_dir: Path, name: str) -> Any:
    p = run_dir / name
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        raise TrialError(f"{p} is missing", _RUN_DIR_FIX) from None
    except (OSError, ValueError) as e:  # a JSONDecodeError is a ValueError
        raise TrialError(f"{p} cannot be read: {e}", _RUN_DIR_FIX) from None


def _schedule_inputs(a: argparse.Namespace) -> tuple[list[Step], Any, str, dict[str, str] | None]:
    """RUN_DIR's schedule, nemesis settings and run id, and the --selector labels."""
    from kafka_trial.harness.spec import read_saved_spec

    run_dir = Path(a.run_dir)
    if not run_dir.is_dir():
        raise TrialError(f"{run_dir} is not a directory", _RUN_DIR_FIX)
    steps = read_schedule(run_dir)
    nemesis = read_saved_spec(run_dir).nemesis
    # The cluster's run label, as the Docker kind labels what it starts; a run that
    # never started a cluster has none, and its directory's name stands in.
    run_id = run_dir.resolve().name
    if (run_dir / "cluster.json").is_file():
        described = _run_dir_json(run_dir, "cluster.json")
        if isinstance(described, dict) and described.get("run_id"):
            run_id = str(described["run_id"])
    selector: dict[str, str] | None = None
    for item in a.selector or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TrialError(
                f"--selector {item!r} is not KEY=VALUE",
                "write e.g. --selector strimzi.io/kind=Kafka",
            )
        selector = (selector or {}) | {key.strip(): value.strip()}
    return steps, nemesis, run_id, selector


def _cmd_schedule(a: argparse.Namespace) -> int:
    from kafka_trial.nemesis import chaos_mesh

    steps, nemesis, run_id, selector = _schedule_inputs(a)
    if a.fmt == "json":
        print(json.dumps([s.to_dict() for s in steps], indent=1))
        return 0
    if a.fmt == "chaos-mesh-workflow":
        flow, skipped = chaos_mesh.workflow(steps, nemesis, run_id, a.namespace, selector)
        docs = [flow]
    else:
        docs, skipped = chaos_mesh.resources(steps, nemesis, run_id, a.namespace, selector)
    # One comment per package left out, however many of its steps: the reason is the same.
    counts: dict[tuple[str, str], int] = {}
    for package, reason in skipped:
        counts[(package, reason)] = counts.get((package, reason), 0) + 1
    for (package, reason), n in counts.items():
        print(f"# skipped: {package} ({n} fault step{'s' if n > 1 else ''}): {reason}")
    if docs:
        print(yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True), end="")
    return 0


def _cmd_shrink(a: argparse.Namespace) -> int:
    from kafka_trial.harness.shrink_command import shrink_command

    return shrink_command(
        Path(a.run_dir), a.repeats, a.anomaly, Path(a.out) if a.out else None, a.spark_master
    )


def _shrink_parser(sub: Any) -> None:
    sh = sub.add_parser(
        "shrink",
        help="find the smallest schedule that still fails like a failing run",
        description="From an INVALID run, search for the smallest fault schedule that "
        "still shows one of its forbidden anomalies (or --anomaly): delta debugging over "
        "the fault steps, then a shorter fault phase, then simpler targets. Each "
        "candidate runs up to --repeats times on one warm cluster and fails if any run "
        "shows the anomaly. Writes shrunk.yaml (replay it with kafka-trial run --config), "
        "shrink.json and shrink.html. Ctrl-C keeps the best found so far.",
    )
    sh.add_argument("run_dir", metavar="RUN_DIR", help="the failing run's directory")
    sh.add_argument(
        "--repeats", type=_at_least_one, default=3, help="runs per candidate at most (3)"
    )
    sh.add_argument("--anomaly", help="the anomaly to keep (default: any forbidden one seen)")
    sh.add_argument("--out", help="where the search writes (default: RUN_DIR/shrink)")
    sh.add_argument("--spark-master", help="local[*] (default) or spark://HOST:7077")
    sh.set_defaults(fn=_cmd_shrink)


def _at_least_one(s: str) -> int:
    try:
        n = int(s)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {s!r}")
    return n


def _cmd_heal(a: argparse.Namespace) -> int:
    if a.inventory:
        from kafka_trial.cluster.ssh_cluster import heal_inventory

        for line in heal_inventory(a.inventory):
            print(line)
        return 0
    from kafka_trial.cluster.leftovers import heal_leftovers

    print(heal_leftovers())
    return 0


def _cmd_mark(a: argparse.Namespace) -> int:
    from datetime import datetime

    from kafka_trial.harness.marks import add_mark

    mark = add_mark(Path(a.run_dir), a.text)
    at = datetime.fromtimestamp(mark["at"]).astimezone().isoformat(timespec="seconds")
    print(f"marked at {at}: {mark['text']}")
    return 0


def _cmd_cleanup(a: argparse.Namespace) -> int:
    from kafka_trial.cluster.engine import ensure_engine
    from kafka_trial.cluster.leftovers import remove_leftovers
    from kafka_trial.workloads.app_groups import kill_leftover_apps

    # The app's processes first: they need no Docker engine, and an engine that does
    # not answer must not leave them running.
    apps = kill_leftover_apps(force=a.all)
    if apps:
        print(f"killed {apps} leftover app process groups")
    n = remove_leftovers(ensure_engine(), force=a.all)
    print(f"removed {n} leftover containers, networks and volumes")
    return 0


def _cmd_images(a: argparse.Namespace) -> int:
    from kafka_trial.cluster.engine import ensure_engine
    from kafka_trial.cluster.images import ensure_images
    from kafka_trial.harness.presets import preset
    from kafka_trial.harness.spec import load_spec

    cluster = {"kafka_version": a.kafka_version, "kafka_image": a.kafka_image}
    over = {"cluster": {k: v for k, v in cluster.items() if v is not None}}
    typed = {f"cluster.{k}": f"--{k.replace('_', '-')}" for k in over["cluster"]}
    spec = load_spec(a.config, over, preset(a.preset) if a.preset else None, typed=typed)
    imgs = ensure_images(ensure_engine(), spec.cluster)
    print(f"kafka {imgs.kafka_version}: {imgs.kafka}\ntoxiproxy: {imgs.toxiproxy}")
    return 0


def _image_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kafka-version", help="exact (4.1.1) or prefix (4, 3.9); default: the newest 4.x"
    )
    p.add_argument("--kafka-image", help="use this local image (apache/kafka contract)")


def _config_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="YAML or JSON run config (examples/)")
    p.add_argument(
        "--preset",
        help=f"a named configuration (`kafka-trial presets`): {', '.join(PRESETS)}",
    )


def _spec_flags(p: argparse.ArgumentParser) -> None:
    _config_flags(p)
    p.add_argument("--name", help="the run's name, in its directory's name (default: default)")
    p.add_argument(
        "--seed", type=int, help="seeds the fault schedule and targets: same seed, same faults"
    )
    p.add_argument(
        "--duration",
        type=float,
        help="seconds of the fault phase (default 60); too short for one fault is refused",
    )
    p.add_argument("--runs-dir", help="where run directories go (default: runs)")
    p.add_argument(
        "--inventory",
        metavar="NODES_YAML",
        help="put your own cluster on trial over SSH: its nodes (docs/clusters.md)",
    )
    p.add_argument(
        "--bootstrap",
        metavar="HOST:PORT",
        help="observer mode: a cluster known by its address, never faulted (--nemesis none; "
        "client security with --set client.security.protocol=...)",
    )
    p.add_argument(
        "--keep-topics",
        action="store_true",
        help="with --inventory or --bootstrap: keep the run's topics afterwards",
    )
    _image_flags(p)
    p.add_argument("--partitions", type=int, help="partitions of the run's topic (default 3)")
    p.add_argument("--replication-factor", type=int, help="replicas of each partition (default 3)")
    p.add_argument("--min-isr", type=int, help="the topic's min.insync.replicas (default 2)")
    p.add_argument(
        "--unclean",
        type=_bool,
        metavar="BOOL",
        help="unclean.leader.election.enable on the topic (default false)",
    )
    p.add_argument("--acks", help="the producers' acks: 0, 1 or all (default all)")
    p.add_argument(
        "--idempotence",
        type=_bool,
        metavar="BOOL",
        help="enable.idempotence for the producers (default true)",
    )
    p.add_argument("--retries", type=int, help="the producers' retries")
    p.add_argument(
        "--max-in-flight",
        type=int,
        help="max.in.flight.requests.per.connection for the producers",
    )
    p.add_argument(
        "--clients", "--workers", dest="workers", type=int, help="producer clients (lanes)"
    )
    p.add_argument(
        "--rate",
        type=_rate,
        metavar="N|unlimited",
        help="values per second offered by all producers (producer.target_rate)",
    )
    _fault_flags(p)
    p.add_argument("--spark-master", help="local[*] (default) or spark://HOST:7077")
    _app_flags(p)
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="any setting by its dotted config key, e.g. --set producer.linger_ms=20 "
        "--set nemesis.faults=[pause] (repeatable; values are YAML)",
    )


def _fault_flags(p: argparse.ArgumentParser) -> None:
    """Which faults, aimed where, and which anomalies they may show."""
    p.add_argument(
        "--nemesis", help=f"comma-separated fault packages, or none: {', '.join(PACKAGES)}"
    )
    p.add_argument(
        "--targets",
        help="comma-separated roles the role-aimed packages pick their broker by, looked "
        f"up when each fault starts (nemesis.targets): {', '.join(ROLES)}; the packages "
        f"that aim by them: {', '.join(sorted(ROLE_PACKAGES))}",
    )
    p.add_argument(
        "--topologies",
        help=f"comma-separated shapes `partition` draws from (nemesis.topologies): "
        f"{', '.join(TOPOLOGIES)}",
    )
    p.add_argument(
        "--allow",
        help=f"comma-separated anomaly types that do not fail the run: {', '.join(ANOMALY_TYPES)}",
    )


def _app_flags(p: argparse.ArgumentParser) -> None:
    """Your own program on trial between the run's topic and TOPIC-out (docs/apps.md)."""
    p.add_argument(
        "--app-command",
        metavar="CMD",
        help="put this shell command on trial as the application between the run's topic "
        "and TOPIC-out; {KAFKA_BOOTSTRAP_SERVERS}, {INPUT_TOPIC}, {OUTPUT_TOPIC}, "
        "{GROUP_ID} and {INSTANCE_ID} are replaced, and set in its environment",
    )
    p.add_argument(
        "--app-image",
        metavar="IMAGE",
        help="put this local Docker image on trial as the application (the same "
        "environment); instead of --app-command",
    )
    # Not argparse choices: a bad value is a spec error, one line and exit 3.
    p.add_argument(
        "--app-guarantee",
        metavar="G",
        help="what the application promises: exactly-once, at-least-once or at-most-once "
        "(required with an app)",
    )
    p.add_argument(
        "--app-instances", type=int, metavar="N", help="copies of the application (default 2)"
    )


def _junit_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--junitxml",
        metavar="PATH",
        help="also write the verdict as JUnit XML: a testcase per check, for CI",
    )


class _Parser(argparse.ArgumentParser):
    """Usage errors exit 3, like every other setup problem; 2 means `unknown`."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(3, f"kafka-trial: {message} -- fix: see kafka-trial --help\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kafka-trial", description=__doc__)
    p.add_argument("--version", action="version", version=f"kafka-trial {__version__}")
    p.add_argument(
        "--progress",
        choices=("auto", "live", "plain", "off"),
        default="auto",
        help="the status line: live on a terminal, plain log lines every 10 s otherwise "
        "(auto, the default), or none",
    )
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    _run_commands(sub)
    _campaign_command(sub)
    _housekeeping_commands(sub)
    return p


def _run_commands(sub: Any) -> None:
    """run, analyze, finish and report: a run and its verdict."""
    r = sub.add_parser(
        "run",
        help="run a fault campaign and judge it",
        description="Start a cluster, run the workload under the faults asked for, drain, "
        "judge the history and write report.html. Exit 0 valid, 1 invalid, 2 unknown, 3 "
        "a setup problem.",
    )
    _spec_flags(r)
    r.add_argument("--no-analyze", action="store_true", help="stop after writing the history")
    r.add_argument(
        "--until-fail",
        type=int,
        metavar="N",
        help="hunt a rare failure: run seeds SEED, SEED+1, ... on one warm cluster, each "
        "judged before the next, until one is invalid or N ran; prints the failing seed, "
        "its run directory and the command that replays it",
    )
    _junit_flag(r)
    r.set_defaults(fn=_cmd_run)
    an = sub.add_parser(
        "analyze",
        help="check a stored run's history with Spark",
        description="Judge a history again (results.json, report.html) without running "
        "anything. Exit 0 valid, 1 invalid, 2 unknown.",
    )
    an.add_argument(
        "run_dir",
        metavar="RUN_DIR|HISTORY|URI",
        help="a run directory, a history.jsonl, or a URI Spark reads (hdfs://, s3a://)",
    )
    an.add_argument("--spark-master", help="local[*] (default) or spark://HOST:7077")
    an.add_argument("--out", help="where results.json goes (default: beside the history)")
    _junit_flag(an)
    an.set_defaults(fn=_cmd_analyze)
    fi = sub.add_parser(
        "finish",
        help="run the final drain of a run that was cut off, on its still-running cluster",
        description="A run killed during its fault phase has no drain, so its verdict is "
        "unknown. While its cluster still runs, this heals it, appends the drain to the "
        "same history, and judges it.",
    )
    fi.add_argument(
        "run_dir", metavar="RUN_DIR", help="the directory the cut-off run wrote (runs/latest)"
    )
    fi.add_argument("--keep-cluster", action="store_true", help="do not remove it afterwards")
    fi.add_argument("--no-analyze", action="store_true", help="stop after the drain")
    fi.add_argument("--spark-master", help="local[*] (default) or spark://HOST:7077")
    _junit_flag(fi)
    fi.set_defaults(fn=_cmd_finish)
    rp = sub.add_parser(
        "report",
        help="write RUN_DIR/report.html and print the verdict with witnesses",
        description="Render the verdict a run directory holds (judging its history first "
        "if it was never judged).",
    )
    rp.add_argument(
        "run_dir", metavar="RUN_DIR", help="a run directory (runs/latest is the newest)"
    )
    rp.add_argument(
        "--reanalyze", action="store_true", help="judge the history again before reporting"
    )
    rp.add_argument("--spark-master", help="local[*] (default) or spark://HOST:7077")
    rp.set_defaults(fn=_cmd_report)


def _campaign_command(sub: Any) -> None:
    cg = sub.add_parser(
        "campaign",
        help="run a matrix of runs (presets or configs x nemesis x seeds x Kafka versions)",
        description="Run every entry of the matrix, judge each, and print a summary table; "
        "index.html links every report. Exits with the worst verdict (3 > 1 > 2 > 0).",
    )
    cg.add_argument("--config", "-c", help="campaign YAML (see examples/campaigns/)")
    cg.add_argument("--presets", help="comma-separated presets")
    cg.add_argument("--configs", help="comma-separated run config files")
    cg.add_argument(
        "--nemesis",
        help="fault package lists separated by ';', each comma-separated (none: no faults)",
    )
    cg.add_argument("--seeds", type=int, help="run each entry with seeds 0..N-1")
    cg.add_argument(
        "--until-fail",
        type=int,
        metavar="N",
        help="hunt a rare failure: repeat the matrix up to N rounds, each with new seeds, "
        "judging each run before the next, until a run is invalid",
    )
    cg.add_argument("--kafka-version", help="comma-separated versions, e.g. 4,3.9")
    cg.add_argument("--duration", type=float, help="every run's fault phase, seconds")
    cg.add_argument("--runs-dir", default="runs", help="where the campaign directory goes")
    cg.add_argument("--resume", metavar="DIR", help="run what a campaign directory is missing")
    cg.add_argument(
        "--fresh-clusters",
        action="store_true",
        help="start a new cluster for every run instead of reusing a warm one",
    )
    cg.add_argument(
        "--serial-analysis",
        action="store_true",
        help="judge each run before the next one starts, instead of while it runs",
    )
    cg.add_argument("--spark-master", help="local[*] (default) or spark://HOST:7077")
    _junit_flag(cg)
    cg.set_defaults(fn=_cmd_campaign)


def _housekeeping_commands(sub: Any) -> None:
    """presets, heal, cleanup and images: what is there, and what was left behind."""
    ps = sub.add_parser(
        "presets",
        help="list the presets: each one's claim, faults, allowed",
        description="Every preset with the claim it puts on trial, what to expect, its "
        "faults and the shortest --duration in which they all fire.",
    )
    ps.set_defaults(fn=_cmd_presets)
    sc = sub.add_parser(
        "schedule",
        help="print a run's fault schedule as Chaos Mesh resources (docs/kubernetes.md)",
        description="Turn RUN_DIR/schedule.json into Chaos Mesh resources, one per fault "
        "step, as multi-document YAML on stdout; each is to be applied at its "
        "kafka-trial/at-s. Packages with no Chaos Mesh equivalent are listed first as "
        "`# skipped:` comments. Talks to no cluster.",
    )
    sc.add_argument(
        "run_dir", metavar="RUN_DIR", help="a run directory (runs/latest is the newest)"
    )
    sc.add_argument(
        "--as",
        dest="fmt",
        choices=("chaos-mesh", "chaos-mesh-workflow", "json"),
        default="chaos-mesh",
        help="chaos-mesh: a resource per fault step (default); chaos-mesh-workflow: one "
        "Workflow that times them itself; json: schedule.json as it is",
    )
    sc.add_argument(
        "--namespace", default="kafka", help="the brokers' namespace, and the resources' (kafka)"
    )
    sc.add_argument(
        "--selector",
        action="append",
        metavar="KEY=VALUE",
        help="a label of the brokers' pods (repeatable; default strimzi.io/kind=Kafka)",
    )
    sc.set_defaults(fn=_cmd_schedule)
    _shrink_parser(sub)
    h = sub.add_parser(
        "heal",
        help="heal clusters a crashed run left behind",
        description="Make every link whole and every broker run in clusters that runs "
        "which died left behind (for `finish`); removes nothing. With --inventory, the "
        "user's nodes over SSH: kafka-trial's iptables chain flushed, its qdisc deleted, "
        "its disk filler removed, every broker resumed (SIGCONT) and started.",
    )
    h.add_argument("--inventory", metavar="NODES_YAML", help="heal these nodes over SSH")
    h.set_defaults(fn=_cmd_heal)
    mk = sub.add_parser(
        "mark",
        help="mark an outside event on a running run's timeline",
        description="Record an event kafka-trial did not cause (a rolling upgrade, a "
        "maintenance window, another chaos tool) in the history of a run that is going, "
        "as a nemesis op `mark` with TEXT and the time now; the report draws it.",
    )
    mk.add_argument("run_dir", metavar="RUN_DIR", help="the running run's directory")
    mk.add_argument("text", metavar="TEXT", help="what happened, in 500 characters or fewer")
    mk.set_defaults(fn=_cmd_mark)
    c = sub.add_parser(
        "cleanup",
        help="remove what crashed runs left behind",
        description="Remove the containers, networks and volumes of runs that are gone, "
        "and kill the process groups of the apps on trial they left running.",
    )
    c.add_argument("--all", action="store_true", help="also clusters of runs still alive")
    c.set_defaults(fn=_cmd_cleanup)
    im = sub.add_parser(
        "images",
        help="build (or find cached) images only",
        description="Build the broker and Toxiproxy images from Maven Central and the Go "
        "module proxy, or find them cached.",
    )
    _config_flags(im)
    _image_flags(im)
    im.set_defaults(fn=_cmd_images)


def main(argv: list[str] | None = None) -> int:
    # `kill -USR1 PID` prints every thread's stack: where a run that seems stuck is.
    # Not when stderr is no file (main() called in-process, under capture).
    with contextlib.suppress(ValueError, OSError, AttributeError):
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    a = parser().parse_args(argv)
    from kafka_trial.harness.progress import shown

    live = {"auto": None, "live": True, "plain": False}.get(a.progress)
    try:
        if a.progress == "off":
            return int(a.fn(a))
        with shown(live):
            return int(a.fn(a))
    except TrialError as e:
        print(e.one_line(), file=sys.stderr)
        return e.exit_code
    except BrokenPipeError:
        # The reader left (`| head`): no traceback; stdout points nowhere from here on.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt as e:
        print(f"kafka-trial: interrupted ({e or 'Ctrl-C'}); cluster cleaned up", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
