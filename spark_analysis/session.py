"""One SparkSession per analysis: local[*] by default, or a spark:// cluster."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from harness.engine import ensure_java
from harness.errors import TrialError

LOG4J2 = Path(__file__).with_name("log4j2.properties")


def spark_session(master: str = "local[*]", app: str = "kafka-trial-analysis") -> SparkSession:
    ensure_java()
    # Executors must run the same Python as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        # Histories are small to medium; 200 shuffle partitions only adds overhead.
        .config("spark.sql.shuffle.partitions", "8" if master.startswith("local") else "64")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J2.as_uri()}")
        .config("spark.driver.memory", os.environ.get("KAFKA_TRIAL_SPARK_DRIVER_MEMORY", "2g"))
        .config("spark.sql.session.timeZone", "UTC")
    )
    try:
        spark = builder.getOrCreate()
    except Exception as e:
        raise TrialError(
            f"could not start Spark with master {master}: {str(e).splitlines()[0][:200]}",
            "check --spark-master (local[*] or spark://HOST:7077) and that Java 17+ is installed",
        ) from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark
