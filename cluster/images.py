"""Images built locally and cached by version and content: there is no registry.

- JRE base: debootstrap of Debian bookworm with openjdk-17-jre-headless, imported.
- Kafka: broker jars resolved from Maven Central by mvn, on top of the JRE base.
- Toxiproxy: the Go module built as a static binary, in an image FROM scratch.
- kt-lazyfs: the project's write-back filesystem (lazyfs/, Go, go-fuse from the Go
  module proxy), a static binary copied into the Kafka image; the entrypoint mounts
  it only when cluster.storage is writeback.

A tag carries a hash of everything that went into the image, so a second run
finds it and rebuilds nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from docker.errors import BuildError, ImageNotFound
from kafka_trial.cluster import host
from kafka_trial.cluster.host import apt_install
from kafka_trial.cluster.settings import ClusterSpec
from kafka_trial.contracts.errors import TrialError
from kafka_trial.contracts.log import activity, log

import docker


def docker_dir() -> Path:
    """The build contexts: package data when installed (kafka_trial/dockerfiles), the
    repository's docker/ folder in a checkout or an editable install."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "dockerfiles", here.parent / "docker"):
        if (candidate / "kafka" / "Dockerfile").is_file():
            return candidate
    raise TrialError("kafka-trial's Dockerfiles are missing", "reinstall kafka-trial")


CACHE = host.CACHE
DEBIAN_MIRROR = os.environ.get("KAFKA_TRIAL_DEBIAN_MIRROR", "http://deb.debian.org/debian")
JRE_SUITE = "bookworm"
# libfaketime: preloaded into a broker only with cluster.clock = faketime.
JRE_PACKAGES = ("openjdk-17-jre-headless", "libfaketime")
SLF4J_VERSION = "2.0.17"
RESOLVE_TTL_S = 24 * 3600
LABEL = "kafka-trial.image"


@dataclass(frozen=True)
class Images:
    kafka: str
    toxiproxy: str
    kafka_version: str


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def _have(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except ImageNotFound:
        return False


def _run(cmd: list[str], what: str, fix: str, **kw: object) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if res.returncode != 0:
        out = (res.stdout + res.stderr).strip().splitlines()
        errs = [ln for ln in out if "ERROR" in ln or "error" in ln] or out or ["(no output)"]
        raise TrialError(f"{what} failed: {errs[0][:300]}", fix)
    return res


# --- JRE base -----------------------------------------------------------------


def jre_base(client: docker.DockerClient, configured: str | None) -> str:
    if configured:
        if not _have(client, configured):
            raise TrialError(
                f"configured JRE base image {configured} is not present locally",
                "build or load it (docker load / docker build), or unset cluster.jre_base_image",
            )
        return configured
    tag = f"kafka-trial/jre:{JRE_SUITE}-{_digest(JRE_SUITE, *JRE_PACKAGES, 'minbase')}"
    if _have(client, tag):
        return tag
    if os.geteuid() != 0:
        raise TrialError(
            "building the JRE base image needs root (debootstrap)",
            "run once as root, or set cluster.jre_base_image to an image with Java 17+",
        )
    if shutil.which("debootstrap") is None:
        apt_install("debootstrap")
    log(f"building JRE base image {tag} with debootstrap (about a minute)")
    t0 = time.monotonic()
    with (
        activity("building the JRE base image (debootstrap)"),
        tempfile.TemporaryDirectory(prefix="kt-jre-") as tmp,
    ):
        root = Path(tmp) / "root"
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(JRE_PACKAGES)}",
                JRE_SUITE,
                str(root),
                DEBIAN_MIRROR,
            ],
            "debootstrap of the JRE base",
            "check that Debian's package mirror is reachable (KAFKA_TRIAL_DEBIAN_MIRROR)",
        )
        # Apt caches are dead weight in the image.
        for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(root / sub, ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        try:
            client.api.import_image_from_stream(
                tar.stdout,
                repository=tag.split(":")[0],
                tag=tag.split(":")[1],
                changes=[f"LABEL {LABEL}=jre", "ENV LANG=C.UTF-8"],
            )
        finally:
            tar.stdout.close()
            tar.wait()
    if not _have(client, tag):
        raise TrialError(f"docker import did not produce {tag}", "see the engine's log")
    log(f"JRE base image ready in {time.monotonic() - t0:.0f}s")
    return tag


# --- Kafka jars -----------------------------------------------------------------

_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _pom(version: str, slf4j: bool = True) -> str:
    deps = [("org.apache.kafka", "kafka_2.13", version)]
    if slf4j:
        # Kafka logs through SLF4J; a simple binding sends it to stderr for docker logs.
        deps += [
            ("org.slf4j", "slf4j-api", SLF4J_VERSION),
            ("org.slf4j", "slf4j-simple", SLF4J_VERSION),
        ]
    body = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>kafka-trial</groupId><artifactId>broker-jars</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{body}</dependencies></project>"
    )


def _mvn() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        if os.geteuid() == 0 and Path("/etc/debian_version").exists():
            apt_install("maven")
            mvn = shutil.which("mvn")
        if mvn is None:
            raise TrialError(
                "Maven (mvn) is needed to resolve Kafka jars", "install maven and rerun"
            )
    return mvn


def _range_for(prefix: str) -> str:
    parts = [int(x) for x in prefix.split(".")]
    upper = [*parts[:-1], parts[-1] + 1]
    return f"[{'.'.join(map(str, parts))},{'.'.join(map(str, upper))})"


def _available_versions(prefix: str) -> list[str]:
    """Release versions of kafka_2.13 under a prefix, from Maven Central's metadata.

    Resolving a version range makes Maven fetch the artifact's metadata into the
    local repository, whether or not the newest version then resolves.
    """
    with tempfile.TemporaryDirectory(prefix="kt-mvn-") as tmp:
        (Path(tmp) / "pom.xml").write_text(_pom(_range_for(prefix), slf4j=False))
        subprocess.run(
            [_mvn(), "-q", "-B", "dependency:resolve", "-DexcludeTransitive=true"],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
    repo = Path.home() / ".m2" / "repository" / "org/apache/kafka/kafka_2.13"
    text = "".join(m.read_text() for m in repo.glob("maven-metadata-*.xml"))
    if not text:
        raise TrialError(
            "could not read Kafka's version list from Maven Central",
            "check that Maven Central is reachable, or set an exact cluster.kafka_version",
        )
    return sorted(
        {
            v
            for v in re.findall(r"<version>([^<]+)</version>", text)
            if _RELEASE.match(v) and (v == prefix or v.startswith(prefix + "."))
        },
        key=_vkey,
        reverse=True,
    )


def _fetch_jars(version: str) -> Path | None:
    dest = CACHE / "kafka-jars" / version
    if (dest / ".complete").exists():
        return dest
    with tempfile.TemporaryDirectory(prefix="kt-pom-") as tmp:
        (Path(tmp) / "pom.xml").write_text(_pom(version))
        libs = Path(tmp) / "libs"
        with activity(f"resolving Kafka {version} jars from Maven Central (mvn)"):
            res = subprocess.run(
                [
                    _mvn(),
                    "-q",
                    "-B",
                    "dependency:copy-dependencies",
                    f"-DoutputDirectory={libs}",
                    "-DincludeScope=runtime",
                ],
                cwd=tmp,
                capture_output=True,
                text=True,
            )
        if res.returncode != 0 or not any(libs.glob("kafka_2.13-*.jar")):
            return None
        # slf4j-api may also arrive in an older version through Kafka; keep ours only.
        for jar in libs.glob("slf4j-api-*.jar"):
            if jar.name != f"slf4j-api-{SLF4J_VERSION}.jar":
                jar.unlink()
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(libs, dest)
        (dest / ".complete").write_text(version)
    return dest


def resolve_kafka(want: str) -> tuple[str, Path]:
    """Exact version, or the newest release under a prefix whose jars all resolve."""
    if _RELEASE.match(want):
        log(f"resolving Kafka {want} jars from Maven Central")
        jars = _fetch_jars(want)
        if jars is None:
            raise TrialError(
                f"Kafka {want} does not resolve from Maven Central",
                "pick a published version (e.g. 4.1.1, 3.9.1) for cluster.kafka_version",
            )
        return want, jars
    memo = CACHE / "resolved-versions.json"
    known: dict[str, dict[str, object]] = json.loads(memo.read_text()) if memo.exists() else {}
    hit = known.get(want)
    if hit and time.time() - float(hit["at"]) < RESOLVE_TTL_S:  # type: ignore[arg-type]
        version = str(hit["version"])
        jars = _fetch_jars(version)
        if jars is not None:
            return version, jars
    log(f"looking up the newest Kafka {want}.x on Maven Central")
    candidates = _available_versions(want)
    for version in candidates:
        log(f"resolving Kafka {version} jars")
        jars = _fetch_jars(version)
        if jars is not None:
            known[want] = {"version": version, "at": time.time()}
            memo.parent.mkdir(parents=True, exist_ok=True)
            memo.write_text(json.dumps(known))
            return version, jars
        log(f"Kafka {version} does not fully resolve; trying the next older release")
    raise TrialError(
        f"no Kafka release matching {want!r} resolves from Maven Central",
        "set cluster.kafka_version to an exact published version",
    )


def _build(client: docker.DockerClient, context: Path, tag: str, buildargs: dict[str, str]) -> None:
    with activity(f"building image {tag}"):
        _build_now(client, context, tag, buildargs)


def _build_now(
    client: docker.DockerClient, context: Path, tag: str, buildargs: dict[str, str]
) -> None:
    try:
        client.images.build(
            path=str(context), tag=tag, buildargs=buildargs, rm=True, forcerm=True, pull=False
        )
    except BuildError as e:
        lines = [str(x.get("stream", x.get("error", ""))).strip() for x in e.build_log]
        tail = [ln for ln in lines if ln][-1:] or [str(e)]
        raise TrialError(
            f"building {tag} failed: {tail[0][:300]}", "see the message above"
        ) from None


def _lazyfs_dir() -> Path:
    """kt-lazyfs's Go source: package data when installed (kafka_trial/lazyfs), the
    repository's lazyfs/ folder in a checkout."""
    src = Path(__file__).resolve().parent.parent / "lazyfs"
    if not (src / "go.mod").is_file():
        raise TrialError("kafka-trial's lazyfs sources are missing", "reinstall kafka-trial")
    return src


def lazyfs_sources() -> list[Path]:
    """What the binary is built from (tests excluded): its cache key."""
    src = _lazyfs_dir()
    return sorted(
        p
        for p in src.iterdir()
        if p.name in ("go.mod", "go.sum") or (p.suffix == ".go" and not p.stem.endswith("_test"))
    )


def lazyfs_digest() -> str:
    return _digest(*(f"{p.name}\0".encode() + p.read_bytes() for p in lazyfs_sources()))


def go_binary(what: str) -> str:
    """The Go toolchain, or a TrialError that says how to get it (as for Toxiproxy)."""
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None
    )
    if go is None:
        raise TrialError(f"Go is needed to build {what}", "install Go 1.23 or newer and rerun")
    return go


def lazyfs_binary() -> Path:
    """kt-lazyfs built as a static binary, cached by a digest of its sources."""
    dest = CACHE / "kt-lazyfs" / lazyfs_digest()
    binary = dest / "kt-lazyfs"
    if binary.exists():
        return binary
    go = go_binary("kt-lazyfs (the write-back filesystem)")
    log("building kt-lazyfs from lazyfs/ (go build)")
    with (
        activity("building kt-lazyfs (go build)"),
        tempfile.TemporaryDirectory(prefix="kt-lazyfs-") as tmp,
    ):
        # A copy: an installed package's folder may be read-only, and go writes nothing
        # into the source tree this way either.
        work = Path(tmp) / "src"
        work.mkdir()
        for p in lazyfs_sources():
            shutil.copy(p, work / p.name)
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod")
        _run(
            [go, "build", "-trimpath", "-ldflags=-s -w", "-o", str(Path(tmp) / "kt-lazyfs"), "."],
            "go build of kt-lazyfs",
            "check that the Go module proxy is reachable (github.com/hanwen/go-fuse/v2)",
            cwd=work,
            env=env,
        )
        dest.mkdir(parents=True, exist_ok=True)
        shutil.move(str(Path(tmp) / "kt-lazyfs"), binary)
    return binary


def kafka_image(client: docker.DockerClient, spec: ClusterSpec) -> tuple[str, str]:
    if spec.kafka_image:
        if not _have(client, spec.kafka_image):
            raise TrialError(
                f"configured Kafka image {spec.kafka_image} is not present locally",
                "load it into the engine first, or unset cluster.kafka_image",
            )
        return spec.kafka_image, spec.kafka_version
    version, jars = resolve_kafka(spec.kafka_version)
    base = jre_base(client, spec.jre_base_image)
    base_id = client.images.get(base).id
    src = docker_dir() / "kafka"
    jar_names = sorted(p.name for p in jars.glob("*.jar"))
    lazyfs = lazyfs_digest()
    tag = (
        "kafka-trial/kafka:"
        + version
        + "-"
        + _digest(
            base_id,
            (src / "Dockerfile").read_bytes(),
            (src / "entrypoint.sh").read_bytes(),
            lazyfs,
            *jar_names,
        )
    )
    if _have(client, tag):
        return tag, version
    log(f"building {tag}")
    with tempfile.TemporaryDirectory(prefix="kt-kafka-") as tmp:
        ctx = Path(tmp)
        shutil.copy(src / "Dockerfile", ctx / "Dockerfile")
        shutil.copy(src / "entrypoint.sh", ctx / "entrypoint.sh")
        shutil.copy(lazyfs_binary(), ctx / "kt-lazyfs")
        (ctx / "libs").mkdir()
        for name in jar_names:
            shutil.copy(jars / name, ctx / "libs" / name)
        _build(client, ctx, tag, {"BASE": base})
    return tag, version


def toxiproxy_binary(version: str) -> Path:
    dest = CACHE / "toxiproxy" / version
    binary = dest / "toxiproxy-server"
    if binary.exists():
        return binary
    go = go_binary("Toxiproxy")
    log(f"building Toxiproxy {version} from its Go module")
    with (
        activity(f"building Toxiproxy {version} (go install)"),
        tempfile.TemporaryDirectory(prefix="kt-go-") as tmp,
    ):
        env = dict(os.environ, CGO_ENABLED="0", GOBIN=tmp, GOFLAGS="-mod=mod")
        _run(
            [go, "install", f"github.com/Shopify/toxiproxy/v2/cmd/server@v{version}"],
            f"go install of Toxiproxy {version}",
            "check that the Go module proxy is reachable and the version exists",
            env=env,
        )
        dest.mkdir(parents=True, exist_ok=True)
        shutil.move(str(Path(tmp) / "server"), binary)
    return binary


def toxiproxy_image(client: docker.DockerClient, version: str) -> str:
    src = docker_dir() / "toxiproxy"
    tag = f"kafka-trial/toxiproxy:{version}-{_digest(version, (src / 'Dockerfile').read_bytes())}"
    if _have(client, tag):
        return tag
    binary = toxiproxy_binary(version)
    log(f"building {tag}")
    with tempfile.TemporaryDirectory(prefix="kt-tp-") as tmp:
        ctx = Path(tmp)
        shutil.copy(src / "Dockerfile", ctx / "Dockerfile")
        shutil.copy(binary, ctx / "toxiproxy-server")
        _build(client, ctx, tag, {})
    return tag


def ensure_images(client: docker.DockerClient, spec: ClusterSpec) -> Images:
    # Two processes building the same image or jar cache would corrupt it.
    with host.host_lock("images", "building or checking kafka-trial's images"):
        tp = toxiproxy_image(client, spec.toxiproxy_version)
        kafka, version = kafka_image(client, spec)
    return Images(kafka=kafka, toxiproxy=tp, kafka_version=version)
