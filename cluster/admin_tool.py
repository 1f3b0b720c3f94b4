"""The Admin API calls the Python client lacks (partition reassignment), made by
Kafka's own Java client: docker/admin/KafkaTrialAdmin.java, compiled once per Kafka
version with the host's JDK against that version's jars (the ones the broker image
is built from) and run per call. Each call prints one JSON object."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_trial.cluster.host import CACHE, host_lock
from kafka_trial.cluster.images import docker_dir, resolve_kafka
from kafka_trial.contracts.errors import TrialError

SOURCE = "KafkaTrialAdmin.java"


def _source() -> str:
    return (docker_dir() / "admin" / SOURCE).read_text()


@dataclass(frozen=True)
class AdminTool:
    classes: Path
    jars: Path

    @classmethod
    def for_version(cls, kafka_version: str) -> AdminTool:
        """Compiled on first use; the class files are kept per version and source."""
        version, jars = resolve_kafka(kafka_version)
        text = _source()
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        classes = CACHE / "admin-tool" / f"{version}-{digest}"
        if not (classes / "KafkaTrialAdmin.class").is_file():
            javac = shutil.which("javac")
            if javac is None:
                raise TrialError(
                    "a JDK (javac) is needed to build kafka-trial's admin tool",
                    "install a JDK 17 (apt-get install openjdk-17-jdk-headless)",
                )
            with host_lock("admin-tool", "compiling kafka-trial's admin tool"):
                classes.mkdir(parents=True, exist_ok=True)
                src = classes / SOURCE
                src.write_text(text)
                res = subprocess.run(
                    [javac, "-cp", f"{jars}/*", "-d", str(classes), str(src)],
                    capture_output=True,
                    text=True,
                )
                if res.returncode != 0:
                    raise TrialError(
                        f"kafka-trial's admin tool does not compile against Kafka {version}: "
                        f"{res.stderr.strip().splitlines()[-1:] or res.returncode}",
                        "report it with the Kafka version; faults without it still run",
                    )
        return cls(classes, jars)

    def call(self, bootstrap: str, *args: str, timeout_s: float = 60) -> dict[str, Any]:
        cmd = ["java", "-cp", f"{self.classes}:{self.jars}/*", "KafkaTrialAdmin", bootstrap, *args]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"admin tool {args[0]} took over {timeout_s:.0f} s") from None
        if res.returncode != 0:
            last = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
            raise RuntimeError(f"admin tool {args[0]}: {last}")
        return json.loads(res.stdout.strip().splitlines()[-1])
