"""One SparkSession per analysis: local[*] by default, or a spark:// cluster."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path

from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import log
from kafka_trial.spark_analysis.spark import jvm_lookups
from kafka_trial.spark_analysis.spark.java import ensure_java
from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

# Shipped as spark_analysis's package data, where the wheel has always held it.
LOG4J2 = Path(__file__).parent.parent / "log4j2.properties"

# An analysis of a small history is CPU-bound on a JVM that barely warmed up: on
# this 2-core machine the C2 compiler threads took ~40% of its CPU and G1's
# concurrent and parallel threads ~15%. The serial collector and a higher bar for
# C2 halve its CPU time (cold 70 -> 41 s, warm 26-30 -> 13-17 s for a 450-line
# history, four analyses in one session), and loops over big histories still get C2.
JIT_AND_GC = (
    "-XX:+UseSerialGC -XX:Tier4InvocationThreshold=50000 "
    "-XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=400000"
)
# A JVM that judges one small history and exits (`kafka-trial run`, `analyze`,
# `finish`) never repays C2's compiles at all, so it runs C1 alone. A session that
# judges one history after another keeps JIT_AND_GC, because there C1's slower code
# costs more than C2's compiles (docs/findings.md, "An analysis that judges one
# history and exits compiles with C1 only").
JIT_ONE_SHOT = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


def driver_log() -> Path:
    """Where the embedded driver JVM writes its own output (it is no verdict)."""
    default = Path(tempfile.gettempdir()) / f"kafka-trial-spark-{os.getuid()}.log"
    return Path(os.environ.get("KAFKA_TRIAL_SPARK_LOG", default))


# One session is started at a time: `prestart` starts it on a thread while the run's
# heal and drain go on, and an analysis that asks meanwhile waits for that one.
_starting = threading.Lock()
# The context `prestart` started, if it started one.
_early: SparkContext | None = None


def _launch_context(conf: SparkConf) -> None:
    """Start the driver JVM with its stderr going to driver_log(): the JVM launcher
    prints there before any logging config applies (e.g. "Using incubator modules").
    Only the JVM's stderr is redirected, not this process's, so log lines written by
    other threads while the JVM starts still reach the terminal."""
    gateway = None
    if SparkContext._gateway is None:  # else a failed start left its JVM to reuse
        with driver_log().open("ab") as out:
            gateway = launch_gateway(conf, popen_kwargs={"stderr": out})
    SparkContext(conf=conf, gateway=gateway)


def spark_session(
    master: str = "local[*]", app: str = "kafka-trial-analysis", one_shot: bool = False
) -> SparkSession:
    """The active session, or a new one. `one_shot`: a JVM started now will judge one
    small history and exit, so it compiles with C1 only (JIT_ONE_SHOT)."""
    with _starting:
        return _spark_session(master, app, one_shot)


def _spark_session(master: str, app: str, one_shot: bool) -> SparkSession:
    if SparkContext._active_spark_context is None:
        # Only a JVM about to start needs one: with a session up, `java -version`
        # was a process per analysis for nothing.
        ensure_java()
    jvm_lookups.install()
    # Executors must run the same Python as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    options = {
        "spark.master": master,
        "spark.app.name": app,
        # Histories are small to medium; 200 shuffle partitions only adds overhead.
        "spark.sql.shuffle.partitions": "8" if master.startswith("local") else "64",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # The status store keeps every query's plan and per-task metrics for the UI
        # even with the UI off (1,000 queries by default); a session that judges one
        # history after another (the tests, finish, campaigns) filled its heap with
        # them and spent most of its time in full GCs.
        "spark.sql.ui.retainedExecutions": "8",
        "spark.ui.retainedJobs": "32",
        "spark.ui.retainedStages": "32",
        "spark.ui.retainedTasks": "1000",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2.as_uri()} "
        + (JIT_ONE_SHOT if one_shot else JIT_AND_GC),
        # Each analysis generates a few hundred classes; Spark's default cache of 100
        # compiled ones evicted them all, so every analysis in a session compiled
        # (Janino) and JIT-compiled the same classes again.
        "spark.sql.codegen.cache.maxEntries": "1000",
        "spark.driver.memory": os.environ.get("KAFKA_TRIAL_SPARK_DRIVER_MEMORY", "2g"),
        "spark.sql.session.timeZone": "UTC",
        # A window over one process's reads (the drain's are most of a history) is
        # buffered whole and spills in many files; each spill reader's read-ahead
        # buffers ran a 10M-line analysis out of its 2 GB heap. (The reader's buffer
        # stays at its default: Spark refuses one below 1 MiB.)
        "spark.unsafe.sorter.spill.read.ahead.enabled": "false",
        # Parquet compresses a history about 5x, so 128 MB splits of the columnar
        # cache hold 5x the rows of the JSON's, and one cached partition of a 10M-line
        # history no longer fit the heap when read back.
        "spark.sql.files.maxPartitionBytes": "32m",
        # PySpark 4 wraps every Column function to send its Python call site to the
        # JVM for error messages: ten round trips to the driver per function, two
        # thirds of an analysis's ~14,000, each waiting for a busy JVM's thread.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
    }
    fresh = SparkContext._active_spark_context is None
    try:
        if fresh:
            _launch_context(SparkConf().setAll(options.items()))
        spark = SparkSession.builder.config(map=options).getOrCreate()
    except Exception as e:
        raise TrialError(
            f"could not start Spark with master {master}: {str(e).splitlines()[0][:200]}",
            "check --spark-master (local[*] or spark://HOST:7077) and that Java 17+ is installed",
        ) from None
    spark.sparkContext.setLogLevel("ERROR")
    if fresh:
        warm_python_workers(spark)
    return spark


def warm_python_workers(spark: SparkSession) -> threading.Thread:
    """Start Spark's Python workers now, on a thread, with one Arrow function over
    nothing much: the per-partition checks run as one (checks/partition_pass.py), and
    workers that start on it cost seconds more, then, than while the JVM parses."""

    def run() -> None:
        try:
            rows = spark.range(0, 2, 1, 2)
            rows.groupBy("id").applyInArrow(lambda k, t: t, "id long").collect()
        except Exception as e:  # the checks start them themselves, and say what fails
            log(f"warming Spark's Python workers failed: {str(e).splitlines()[0][:200]}")

    t = threading.Thread(target=run, name="spark-python-workers", daemon=True)
    t.start()
    return t


def prestart(master: str = "local[*]", one_shot: bool = False) -> threading.Thread:
    """Start the session on a daemon thread, so that an analysis that comes later
    (`kafka-trial run` judges right after its drain) finds it up. A failure here is
    only logged: the analysis starts the session again and reports its error."""

    def start() -> None:
        global _early
        try:
            with _starting:
                fresh = SparkContext._active_spark_context is None
                spark = _spark_session(master, "kafka-trial-analysis", one_shot)
                if fresh:
                    _early = spark.sparkContext
        except Exception as e:  # the analysis will start it again and say why it failed
            log(f"starting Spark ahead of the analysis failed: {str(e).splitlines()[0][:200]}")

    t = threading.Thread(target=start, name="spark-prestart", daemon=True)
    t.start()
    return t


def started_early(spark: SparkSession) -> bool:
    """Whether `prestart` started this session's JVM, ahead of the analysis."""
    return _early is not None and spark.sparkContext is _early


def jit_profile(spark: SparkSession) -> str:
    """How the session's driver JVM compiles: "one-shot" (C1 only) or "long"."""
    opts = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions") or ""
    return "one-shot" if "TieredStopAtLevel=1" in opts else "long"
