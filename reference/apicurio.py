"""Runs Apicurio Registry (reference/apicurio/pom.xml) as a child process, its storage on Weir.

Apicurio's KafkaSQL storage keeps every change in a journal topic (``kafkasql-journal``) through an
idempotent producer (acks=all) and rebuilds its state at start by reading that topic back into an
in-memory H2 database, so everything it knows lives on the broker: stop it, kill the broker,
start both again, and the same subjects, versions and ids come back. It serves Confluent's
schema-registry API under ``/apis/ccompat/v7``, which confluent-kafka's ``SchemaRegistryClient``
speaks. A ``weir.testing.process.ChildProcess`` as the brokers' runners are.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from weir.testing.process import ChildProcess
from weir.testing.settings import free_port

REPO = Path(__file__).resolve().parents[1]

POM = REPO / "reference" / "apicurio" / "pom.xml"
APP_DIR = REPO / "reference" / "apicurio" / "target" / "quarkus-app"
RUNNER = APP_DIR / "quarkus-run.jar"
#: A class-data-sharing archive the JVM writes at its first exit and maps at later starts
#: (JDK 19+): a restart loads Quarkus's classes from it instead of from hundreds of jars.
CDS_ARCHIVE = APP_DIR.parent / "apicurio.jsa"
JVM_HOMES = Path("/usr/lib/jvm")
MIN_JAVA = 21  # Apicurio 3.x is compiled for Java 21 (class files version 65)

# Small heap, serial GC and the client compiler only: a quicker start and far less CPU on a busy
# two-core machine, as reference/kafka.py runs Kafka.
JVM_OPTIONS = ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Djava.awt.headless=true"]


def runner() -> Path:
    """quarkus-run.jar, unpacked from Maven Central first if `make reference` has not done so."""
    if not RUNNER.exists() or RUNNER.stat().st_mtime < POM.stat().st_mtime:
        subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(POM), "dependency:unpack"],
                       check=True, timeout=900)
        RUNNER.touch()  # unpacking keeps the archive's times; newer than the pom from now on
    return RUNNER


def _feature_version(java_home: Path) -> int:
    release = java_home / "release"
    if not release.exists():
        return 0
    found = re.search(r'^JAVA_VERSION="(\d+)', release.read_text(), re.MULTILINE)
    return int(found.group(1)) if found else 0


def java() -> str:
    """The newest JDK's ``java`` of $JAVA_HOME and those under /usr/lib/jvm, if it is 21 or newer
    (Debian 12's default is 17; the machine image has a Temurin 25 beside it)."""
    candidates = [Path(os.environ["JAVA_HOME"])] if os.environ.get("JAVA_HOME") else []
    candidates += JVM_HOMES.iterdir() if JVM_HOMES.exists() else []
    homes = [home for home in candidates if (home / "bin" / "java").exists()]
    best = max(homes, key=_feature_version, default=None)
    if best is None or _feature_version(best) < MIN_JAVA:
        raise RuntimeError(f"Apicurio Registry needs a JDK {MIN_JAVA} or newer under {JVM_HOMES}; found "
                           f"{[home.name for home in homes]}")
    return str(best / "bin" / "java")


class ApicurioProcess(ChildProcess):
    """``start()`` returns once the registry reports itself ready (its journal read back)."""

    kind = "apicurio"
    log_poll_interval = 0.1  # its log is a file read whole at each look

    def __init__(self, run_dir: Path, bootstrap_servers: str, settings: dict[str, str] | None = None):
        self.run_dir = Path(run_dir)
        self.bootstrap_servers = bootstrap_servers
        self.port = free_port()
        self.management_port = free_port()
        self.overrides = dict(settings or {})
        self.process: subprocess.Popen | None = None
        self.startup_seconds: list[float] = []  # one per start()

    @property
    def url(self) -> str:
        """The Confluent-compatible API, as ``SchemaRegistryClient({"url": ...})`` takes it."""
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    @property
    def log_file(self) -> Path:
        return self.run_dir / "registry.log"

    def settings(self) -> dict[str, str]:
        return {
            "quarkus.http.host": "127.0.0.1",
            "quarkus.http.port": str(self.port),
            # health checks on a separate listener (fixed on at Apicurio's build): loopback, our port
            "quarkus.management.host": "127.0.0.1",
            "quarkus.management.port": str(self.management_port),
            "apicurio.storage.kind": "kafkasql",
            "apicurio.kafkasql.bootstrap.servers": self.bootstrap_servers,
            # its startup reads the snapshots topic with this poll timeout before the journal
            # (5 s by default, spent whole on an empty topic)
            "apicurio.kafkasql.consumer.poll.timeout": "500",
            "apicurio.storage.snapshot.location": str(self.run_dir),
            "quarkus.log.category.\"org.apache.kafka\".level": "WARN",
            **self.overrides,
        }

    def command(self) -> list[str]:
        return [java(), *JVM_OPTIONS, "-XX:+AutoCreateSharedArchive", f"-XX:SharedArchiveFile={CDS_ARCHIVE}",
                *(f"-D{name}={value}" for name, value in self.settings().items()), "-jar", str(runner())]

    def start(self, timeout: float = 180.0) -> ApicurioProcess:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        command = self.command()
        began = time.monotonic()
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(command, cwd=self.run_dir, stdout=log, stderr=subprocess.STDOUT)
        self.await_ready(self.ready, "Apicurio Registry", began + timeout, poll=0.2)
        self.startup_seconds.append(time.monotonic() - began)
        return self

    def ready(self) -> bool:
        """Quarkus's readiness: 200 once every check is up, the storage's among them (KafkaSQL is
        ready when it has read the journal to its end), 503 before."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.management_port}/health/ready", timeout=5) as answer:
                return answer.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def restart(self) -> ApicurioProcess:
        """SIGTERM, then start again on the same ports."""
        self.stop()
        return self.start()

    @property
    def lines(self) -> list[str]:
        try:
            return self.log_file.read_text(errors="replace").splitlines(keepends=True)
        except FileNotFoundError:
            return []

    def tail(self, count: int = 40) -> str:
        return "".join(self.lines[-count:])
