"""Builds the Kafka Streams example (CopyApp.java) into a local Docker image.

The jars are org.apache.kafka:kafka-streams of the cluster's Kafka version and its
dependencies, resolved from Maven Central by mvn as kafka-trial resolves the broker's
(kafka_trial.cluster.images); the image is FROM kafka-trial's own JRE base image, so
no registry is needed. The host's javac (JDK 17) compiles the app. The tag carries a
digest of everything that went in, so a second call finds it and builds nothing.

    python examples/apps/streams/build.py [KAFKA_VERSION]   # prints the tag
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from kafka_trial.cluster import host, images
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import activity, log

import docker

HERE = Path(__file__).resolve().parent
SOURCES = ("CopyApp.java", "simplelogger.properties", "Dockerfile")
REPO = "kafka-trial/streams-app"


def _pom(version: str) -> str:
    deps = [
        ("org.apache.kafka", "kafka-streams", version),
        # Streams asks for slf4j-api 1.7; the 2.x binding that logs to stderr needs 2.x.
        ("org.slf4j", "slf4j-api", images.SLF4J_VERSION),
        ("org.slf4j", "slf4j-simple", images.SLF4J_VERSION),
    ]
    body = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>kafka-trial</groupId><artifactId>streams-app-jars</artifactId>"
        f"<version>1</version><packaging>pom</packaging><dependencies>{body}</dependencies>"
        "</project>"
    )


def streams_jars(version: str) -> Path:
    """kafka-streams `version` and its runtime dependencies, cached per version."""
    dest = images.CACHE / "kafka-streams-jars" / version
    if (dest / ".complete").exists():
        return dest
    with tempfile.TemporaryDirectory(prefix="kt-streams-pom-") as tmp:
        (Path(tmp) / "pom.xml").write_text(_pom(version))
        libs = Path(tmp) / "libs"
        with activity(f"resolving kafka-streams {version} jars from Maven Central (mvn)"):
            images._run(
                [
                    images._mvn(),
                    "-q",
                    "-B",
                    "dependency:copy-dependencies",
                    f"-DoutputDirectory={libs}",
                    "-DincludeScope=runtime",
                ],
                f"resolving kafka-streams {version}",
                "check that Maven Central is reachable and the version is published",
                cwd=tmp,
            )
        if not any(libs.glob(f"kafka-streams-{version}.jar")):
            raise TrialError(f"mvn gave no kafka-streams-{version}.jar", "see mvn's output")
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(libs, dest)
        (dest / ".complete").write_text(version)
    return dest


def _compile(jars: Path, out: Path) -> None:
    javac = shutil.which("javac")
    if javac is None:
        raise TrialError("javac is needed to build the Kafka Streams example", "install a JDK 17")
    images._run(
        [javac, "--release", "17", "-cp", f"{jars}/*", "-d", str(out), str(HERE / "CopyApp.java")],
        "javac of CopyApp.java",
        "see the compiler's message",
    )
    shutil.copy(HERE / "simplelogger.properties", out / "simplelogger.properties")


def build_streams_image(
    client: docker.DockerClient, kafka_version: str, jre_base_image: str | None = None
) -> str:
    """The example's image tag for `kafka_version` (exact, or a prefix such as "4"),
    built when missing: FROM the JRE base the brokers' image uses (or `jre_base_image`)."""
    version = kafka_version
    if not images._RELEASE.match(version):
        version, _ = images.resolve_kafka(version)
    # The JRE base and the jar caches are shared with every kafka-trial process.
    with host.host_lock("images", "building the Kafka Streams example image"):
        jars = streams_jars(version)
        base = images.jre_base(client, jre_base_image)
        names = sorted(p.name for p in jars.glob("*.jar"))
        digest = images._digest(
            client.images.get(base).id, *((HERE / s).read_bytes() for s in SOURCES), *names
        )
        tag = f"{REPO}:{version}-{digest}"
        if images._have(client, tag):
            _alias(client, tag)
            return tag
        log(f"building {tag}")
        with tempfile.TemporaryDirectory(prefix="kt-streams-") as tmp:
            ctx = Path(tmp)
            shutil.copy(HERE / "Dockerfile", ctx / "Dockerfile")
            _compile(jars, ctx / "classes")
            (ctx / "libs").mkdir()
            for name in names:
                shutil.copy(jars / name, ctx / "libs" / name)
            images._build(client, ctx, tag, {"BASE": base})
    _alias(client, tag)
    return tag


def _alias(client: docker.DockerClient, tag: str) -> None:
    """`REPO:latest` names the newest build, for configs that cannot name a digest
    (examples/campaigns/apps.yaml)."""
    client.images.get(tag).tag(REPO, "latest")


if __name__ == "__main__":
    print(build_streams_image(docker.from_env(), sys.argv[1] if len(sys.argv) > 1 else "4"))
