"""kafka-trial: run | campaign | analyze | finish | report | presets | heal | cleanup | images."""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import yaml
from kafka_trial.checkers.anomalies import ANOMALY_TYPES
from kafka_trial.contracts.errors import TrialError
from kafka_trial.harness.presets import PRESETS
from kafka_trial.nemesis.catalog import PACKAGES

from kafka_trial import __version__


def _overrides(a: argparse.Namespace) -> dict[str, Any]:
    o: dict[str, Any] = {}

    def put(path: str, value: Any) -> None:
        if value is None:
            return
        d = o
        *parents, leaf = path.split(".")
        for k in parents:
            d = d.setdefault(k, {})
        d[leaf] = value

    put("name", a.name)
    put("seed", a.seed)
    put("duration_s", a.duration)
    put("runs_dir", a.runs_dir)
    put("cluster.kafka_version", a.kafka_version)
    put("cluster.kafka_image", a.kafka_image)
    put("topic.partitions", a.partitions)
    put("topic.replication_factor", a.replication_factor)
    put("topic.min_insync_replicas", a.min_isr)
    put("topic.unclean_leader_election", a.unclean)
    put("producer.acks", a.acks)
    put("producer.idempotence", a.idempotence)
    put("producer.retries", a.retries)
    put("producer.max_in_flight", a.max_in_flight)
    put("producer.clients", a.workers)
    if a.rate is not None:
        put("producer.target_rate", None if a.rate == "unlimited" else a.rate)
    if a.nemesis is not None:
        put("nemesis.faults", [x for x in a.nemesis.split(",") if x] if a.nemesis != "none" else [])
    if a.allow is not None:
        put("check.allowed", [x for x in a.allow.split(",") if x])
    put("check.spark_master", a.spark_master)
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
        put(key.strip(), value)
    return o


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


def _cmd_run(a: argparse.Namespace) -> int:
    from kafka_trial.harness.presets import preset
    from kafka_trial.harness.report import render
    from kafka_trial.harness.runner import new_run_dir, run
    from kafka_trial.harness.spec import load_spec

    spec = load_spec(a.config, _overrides(a), preset(a.preset) if a.preset else None)
    run_dir = new_run_dir(spec)
    outcome = run(spec, run_dir)
    phases = ", ".join(f"{k} {v:.1f}s" for k, v in outcome.phase_s.items())
    print(
        f"run: {outcome.ops} send ops at {outcome.ops_per_s:.0f}/s, "
        f"{outcome.values_acked_per_s:.0f} values acknowledged/s; phases: {phases}"
    )
    if a.no_analyze:
        print(f"run dir: {run_dir}")
        return 0
    from kafka_trial.checkers.verdict import exit_code
    from kafka_trial.spark_analysis.job import analyze

    results = analyze(run_dir, a.spark_master, report=True)
    print(render(results, run_dir))
    _write_html(run_dir, run_dir)
    _write_junit(a, run_dir.name, results)
    return exit_code(results["valid"])


def _write_junit(a: argparse.Namespace, name: str, results: dict[str, Any]) -> None:
    if getattr(a, "junitxml", None):
        from kafka_trial.harness.junit import write_junit

        print(f"junit: {write_junit(Path(a.junitxml), [(name, results)])}")


def _write_html(run_dir: Path, out_dir: Path) -> None:
    """The HTML report beside results.json. A report that fails to build must not
    cost the verdict: it is said in one line, and the exit code stays the verdict's."""
    from kafka_trial.harness.html_report import write_report

    try:
        print(f"report: {write_report(run_dir, out_dir)}")
    except Exception as e:
        print(
            f"kafka-trial: the HTML report failed ({type(e).__name__}: {e}) -- fix: "
            f"rerun `kafka-trial report {out_dir}` and file an issue with the error",
            file=sys.stderr,
        )


def _cmd_campaign(a: argparse.Namespace) -> int:
    from kafka_trial.harness import campaign as cp
    from kafka_trial.harness.html_report import write_report
    from kafka_trial.harness.runner import run, signals_deferred, signals_interrupt
    from kafka_trial.harness.spec import RunSpec
    from kafka_trial.harness.warm_cluster import WarmCluster
    from kafka_trial.spark_analysis.job import analyze

    if a.resume:
        camp_dir = Path(a.resume)
        saved = camp_dir / cp.CAMPAIGN_FILE
        if not saved.is_file():
            raise TrialError(f"{saved} is missing", "pass a directory `campaign` wrote")
        spec = cp.CampaignSpec.model_validate(json.loads(saved.read_text())["spec"])
        origin = None
    else:
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
        spec = cp.load_campaign(a.config, over)
        origin = Path(a.config).resolve() if a.config else None
        # Config files are found from the campaign file; saved absolute, so --resume can.
        spec = spec.model_copy(
            update={"configs": tuple(str(cp.config_path(c, origin)) for c in spec.configs)}
        )
        cp.entries(spec, origin)  # every run's config is checked before anything starts
        camp_dir = cp.new_campaign_dir(Path(a.runs_dir), spec.name)
    print(f"campaign: {camp_dir}")
    if spec.overlap_analysis:
        from kafka_trial.contracts.log import activity
        from kafka_trial.spark_analysis.session import spark_session

        # Started here, not by the judging thread: while the JVM starts, the whole
        # process's stderr points at a log to keep the launcher's banner off the
        # terminal, and the run going on meanwhile would lose its lines to it.
        with activity("analysis: starting Spark"):
            spark_session(a.spark_master or "local[*]")
    warm = WarmCluster() if spec.reuse_clusters else None

    def judge(run_dir: Path) -> dict[str, Any]:
        results = analyze(run_dir, a.spark_master, report=True)
        write_report(run_dir)
        return results

    def run_one(run_spec: RunSpec, run_dir: Path) -> dict[str, Any] | None:
        run(run_spec, run_dir, warm)
        return None if spec.overlap_analysis else judge(run_dir)

    try:
        with signals_interrupt():
            state = cp.run_campaign(
                spec,
                camp_dir,
                run_one,
                resume=bool(a.resume),
                judge=judge if spec.overlap_analysis else None,
            )
    except KeyboardInterrupt:
        state = json.loads((camp_dir / cp.CAMPAIGN_FILE).read_text())
        cp.write_index(camp_dir, state)
        print(cp.summary_table(state))
        print(
            f"kafka-trial: campaign interrupted; finished runs are kept -- fix: "
            f"kafka-trial campaign --resume {camp_dir}",
            file=sys.stderr,
        )
        return 130
    finally:
        if warm is not None:
            with signals_deferred():
                warm.close()
    print(cp.summary_table(state))
    if line := cp.savings_line(state.get("clusters") or {}):
        print(line)
    print(f"index: {cp.write_index(camp_dir, state)}")
    if a.junitxml:
        from kafka_trial.harness.junit import write_junit

        suites = [
            (key, json.loads((camp_dir / key / "results.json").read_text()))
            for key in state["order"]
            if (camp_dir / key / "results.json").is_file()
        ]
        print(f"junit: {write_junit(Path(a.junitxml), suites)}")
    return int(state["exit_code"])


def _cmd_analyze(a: argparse.Namespace) -> int:
    from kafka_trial.checkers.verdict import exit_code
    from kafka_trial.harness.report import render
    from kafka_trial.spark_analysis.job import analyze

    out = Path(a.out) if getattr(a, "out", None) else None
    results = analyze(a.run_dir, a.spark_master, out_dir=out, report=True)
    print(render(results, Path(a.run_dir)))
    out_dir = Path(results["analysis"]["results_file"]).parent
    history = results["history"]["path"]
    local = "://" not in history and Path(history).is_file()
    run_dir = Path(history).parent if local else out_dir
    _write_html(run_dir, out_dir)
    _write_junit(a, run_dir.name, results)
    print(
        f"analysis took {results['analysis']['total_s']:.1f}s "
        f"(spark session {results['analysis']['session_s']:.1f}s)"
    )
    return exit_code(results["valid"])


def _cmd_finish(a: argparse.Namespace) -> int:
    from kafka_trial.harness.finish import finish_run
    from kafka_trial.harness.runner import signals_interrupt

    run_dir = Path(a.run_dir)
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
    from kafka_trial.checkers.verdict import exit_code
    from kafka_trial.harness.html_report import write_report
    from kafka_trial.harness.report import render

    run_dir = Path(a.run_dir)
    if not run_dir.is_dir():
        raise TrialError(f"{run_dir} is not a directory", "pass a run directory")
    have = (run_dir / "results.json").is_file() and (run_dir / "report-data.json").is_file()
    if (a.reanalyze or not have) and (run_dir / "history.jsonl").is_file():
        from kafka_trial.spark_analysis.job import analyze

        print("analyzing the history first (the report draws on the analysis)")
        analyze(run_dir, a.spark_master, report=True)
    path = write_report(run_dir)
    results_file = run_dir / "results.json"
    valid = None
    if results_file.is_file():
        results = json.loads(results_file.read_text())
        print(render(results, run_dir))
        valid = results.get("valid")
    else:
        print("verdict: UNKNOWN (no results.json and no history.jsonl to analyze)")
    print(f"report: {path}")
    return exit_code(valid)


def _cmd_presets(a: argparse.Namespace) -> int:
    from kafka_trial.harness.presets import CLAIMS

    for name, data in PRESETS.items():
        claim = CLAIMS.get(name)
        faults = ", ".join(data.get("nemesis", {}).get("faults", [])) or "none"
        allowed = ", ".join(data.get("check", {}).get("allowed", [])) or "nothing"
        print(f"{name}")
        if claim is not None:
            print(f"  claim {claim.id}: {claim.text}")
            names = ", ".join(claim.anomalies)
            how = "can appear" if claim.expected == "anomaly" else "must never appear"
            print(f"  expect: {names} {how}")
        print(f"  faults: {faults}")
        print(f"  allowed: {allowed}")
    return 0


def _cmd_heal(a: argparse.Namespace) -> int:
    from kafka_trial.cluster.leftovers import heal_leftovers

    print(heal_leftovers())
    return 0


def _cmd_cleanup(a: argparse.Namespace) -> int:
    from kafka_trial.cluster.engine import ensure_engine
    from kafka_trial.cluster.leftovers import remove_leftovers

    n = remove_leftovers(ensure_engine(), force=a.all)
    print(f"removed {n} leftover containers, networks and volumes")
    return 0


def _cmd_images(a: argparse.Namespace) -> int:
    from kafka_trial.cluster.engine import ensure_engine
    from kafka_trial.cluster.images import ensure_images
    from kafka_trial.harness.presets import preset
    from kafka_trial.harness.spec import load_spec

    spec = load_spec(a.config, _overrides(a), preset(a.preset) if a.preset else None)
    imgs = ensure_images(ensure_engine(), spec.cluster)
    print(f"kafka {imgs.kafka_version}: {imgs.kafka}\ntoxiproxy: {imgs.toxiproxy}")
    return 0


def _spec_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="YAML or JSON run config")
    p.add_argument(
        "--preset",
        help=f"a named configuration: {', '.join(PRESETS)}",
    )
    p.add_argument("--name")
    p.add_argument("--seed", type=int)
    p.add_argument("--duration", type=float, help="seconds of the fault phase")
    p.add_argument("--runs-dir")
    p.add_argument("--kafka-version", help="exact (4.1.1) or prefix (4, 3.9)")
    p.add_argument("--kafka-image", help="use this local image (apache/kafka contract)")
    p.add_argument("--partitions", type=int)
    p.add_argument("--replication-factor", type=int)
    p.add_argument("--min-isr", type=int)
    p.add_argument("--unclean", type=_bool, metavar="BOOL")
    p.add_argument("--acks", help="0, 1 or all")
    p.add_argument("--idempotence", type=_bool, metavar="BOOL")
    p.add_argument("--retries", type=int)
    p.add_argument("--max-in-flight", type=int)
    p.add_argument(
        "--clients", "--workers", dest="workers", type=int, help="producer clients (lanes)"
    )
    p.add_argument(
        "--rate",
        type=_rate,
        metavar="N|unlimited",
        help="values per second offered by all producers (producer.target_rate)",
    )
    p.add_argument(
        "--nemesis", help=f"comma-separated fault packages, or none: {', '.join(PACKAGES)}"
    )
    p.add_argument(
        "--allow",
        help=f"comma-separated anomaly types that do not fail the run: {', '.join(ANOMALY_TYPES)}",
    )
    p.add_argument("--spark-master", help="local[*] (default) or spark://HOST:7077")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="any setting by its dotted config key, e.g. --set producer.linger_ms=20 "
        "--set nemesis.faults=[pause] (repeatable; values are YAML)",
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
    r = sub.add_parser("run", help="run a fault campaign and judge it")
    _spec_flags(r)
    r.add_argument("--no-analyze", action="store_true", help="stop after writing the history")
    _junit_flag(r)
    r.set_defaults(fn=_cmd_run)
    an = sub.add_parser("analyze", help="check a stored run's history with Spark")
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
    )
    fi.add_argument("run_dir")
    fi.add_argument("--keep-cluster", action="store_true", help="do not remove it afterwards")
    fi.add_argument("--no-analyze", action="store_true", help="stop after the drain")
    fi.add_argument("--spark-master")
    _junit_flag(fi)
    fi.set_defaults(fn=_cmd_finish)
    rp = sub.add_parser(
        "report", help="write RUN_DIR/report.html and print the verdict with witnesses"
    )
    rp.add_argument("run_dir")
    rp.add_argument(
        "--reanalyze", action="store_true", help="judge the history again before reporting"
    )
    rp.add_argument("--spark-master", help="local[*] (default) or spark://HOST:7077")
    rp.set_defaults(fn=_cmd_report)
    cg = sub.add_parser(
        "campaign",
        help="run a matrix of runs (presets or configs x nemesis x seeds x Kafka versions)",
    )
    cg.add_argument("--config", "-c", help="campaign YAML (see examples/campaigns/)")
    cg.add_argument("--presets", help="comma-separated presets")
    cg.add_argument("--configs", help="comma-separated run config files")
    cg.add_argument(
        "--nemesis",
        help="fault package lists separated by ';', each comma-separated (none: no faults)",
    )
    cg.add_argument("--seeds", type=int, help="run each entry with seeds 0..N-1")
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
    ps = sub.add_parser("presets", help="list the presets: each one's claim, faults, allowed")
    ps.set_defaults(fn=_cmd_presets)
    h = sub.add_parser("heal", help="heal clusters a crashed run left behind")
    h.set_defaults(fn=_cmd_heal)
    c = sub.add_parser("cleanup", help="remove what crashed runs left behind")
    c.add_argument("--all", action="store_true", help="also clusters of runs still alive")
    c.set_defaults(fn=_cmd_cleanup)
    im = sub.add_parser("images", help="build (or find cached) images only")
    _spec_flags(im)
    im.set_defaults(fn=_cmd_images)
    return p


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
        return 3
    except BrokenPipeError:
        # The reader left (`| head`): no traceback; stdout points nowhere from here on.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt as e:
        print(f"kafka-trial: interrupted ({e or 'Ctrl-C'}); cluster cleaned up", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
