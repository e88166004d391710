"""Runs a real Apache Kafka (the version pinned in reference/pom.xml) as a child process.

One node in KRaft combined mode (``process.roles=broker,controller``), its storage formatted
by Kafka's own StorageTool in the run directory the first time it starts, listening on
loopback ports chosen once so that a restart after ``kill()`` comes back where clients
expect it. A ``weir.testing.process.ChildProcess`` as Weir's runner is, so a scenario can
kill -9 and restart either broker.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import time
from pathlib import Path

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import metadata
from weir.testing.process import ChildProcess
from weir.testing.settings import free_ports

REPO = Path(__file__).resolve().parents[1]

POM = REPO / "reference" / "pom.xml"
CLASSPATH_FILE = REPO / "reference" / "target" / "classpath.txt"
LOG_CONFIG = REPO / "reference" / "log4j2.properties"
#: Client programs and tools log warnings to stderr only, so their stdout stays parseable.
TOOLS_LOG_CONFIG = REPO / "reference" / "log4j2-tools.properties"

#: Kafka settings for a fast single-node test broker on top of SHARED_TEST_SETTINGS.
KAFKA_ONLY_SETTINGS = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "num.network.threads": "2",
    "num.io.threads": "2",
    # A node restarted after kill -9 registers again only once its old registration's
    # session has expired: 4 s instead of 9 (heartbeats every 0.5 s keep a busy one alive).
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
}

#: Settings both reference-suite brokers run with (Weir knows each name), so that their
#: answers differ only where their behaviour does: the same node id, few internal-topic
#: partitions (quick to create and load), no initial rebalance delay, and timed-out
#: transactions aborted within a second instead of ten.
SHARED_TEST_SETTINGS = {
    "node.id": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    # consumer-protocol members (KIP-848) heartbeat every 0.5 s instead of 5, so that
    # reconciliation steps follow each other quickly in tests
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "500",
    # streams-group members (KIP-1071) too, and one killed with -9 leaves its group after 6 s
    # instead of 45 (the session must exceed the heartbeat); no delay before a first assignment
    "group.streams.min.heartbeat.interval.ms": "500",
    "group.streams.heartbeat.interval.ms": "500",
    "group.streams.min.session.timeout.ms": "6000",
    "group.streams.session.timeout.ms": "6000",
    "group.streams.initial.rebalance.delay.ms": "0",
}

# Small heap, serial GC and the client compiler only: quicker start and far less CPU on a
# busy two-core machine than Kafka's server defaults (G1, C2).
JVM_OPTIONS = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Djava.awt.headless=true"]
# What kafka-server-start.sh and kafka-run-class.sh give a broker (1 GiB heap, G1, C2): for benchmarks.
PRODUCTION_JVM_OPTIONS = ["-Xms1g", "-Xmx1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                          "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                          "-Djava.awt.headless=true"]


JAVA_SOURCES = REPO / "reference" / "src" / "main" / "java"
JAVA_CLASSES = REPO / "reference" / "target" / "classes"


def classpath() -> str:
    """Our compiled Java programs plus Kafka's jars; built here with Maven if `make reference`
    has not run since the pom or a Java source changed."""
    if not _classpath_current() or not _classes_current():
        build = subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(POM), "compile",
                                "dependency:build-classpath", f"-Dmdep.outputFile={CLASSPATH_FILE}"],
                               capture_output=True, text=True, timeout=600)
        if build.returncode != 0:
            raise RuntimeError(f"building the reference programs failed:\n{build.stdout}{build.stderr}")
        CLASSPATH_FILE.touch()  # the plugin leaves an unchanged file's time as it was
    return os.pathsep.join([str(JAVA_CLASSES), CLASSPATH_FILE.read_text().strip()])


def _classpath_current() -> bool:
    if not CLASSPATH_FILE.exists() or CLASSPATH_FILE.stat().st_mtime < POM.stat().st_mtime:
        return False
    jars = CLASSPATH_FILE.read_text().strip().split(os.pathsep)
    return bool(jars) and all(Path(jar).is_file() for jar in jars)


def _classes_current() -> bool:
    """Every Java source has a class file at least as new as itself."""
    for source in JAVA_SOURCES.rglob("*.java"):
        compiled = JAVA_CLASSES / source.relative_to(JAVA_SOURCES).with_suffix(".class")
        if not compiled.exists() or compiled.stat().st_mtime < source.stat().st_mtime:
            return False
    return True


def java_command(main_class: str, *args: str, heap: str = "256m") -> list[str]:
    """A `java` command line running ``main_class`` (one of ours, a Kafka tool, Kafka Streams)
    on the reference classpath, with the same quick-start JVM options as the broker."""
    return ["java", "-Xms64m", f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={TOOLS_LOG_CONFIG}",
            "-cp", classpath(), main_class, *args]


def kafka_version() -> str:
    for jar in classpath().split(os.pathsep):
        name = Path(jar).name
        if name.startswith("kafka_2.13-"):
            return name[len("kafka_2.13-"):-len(".jar")]
    raise RuntimeError("kafka_2.13 is not on the reference classpath")


def random_cluster_id() -> str:
    """A Kafka Uuid in its text form: 16 random bytes, URL-safe base64, no padding.

    Like Kafka's Uuid.randomUuid, never one starting with '-', which a command line
    would take for an option.
    """
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


class KafkaProcess(ChildProcess):
    """``start()`` formats storage on first use and polls until the broker answers Metadata."""

    kind = "kafka"
    log_poll_interval = 0.05  # its log is a file read whole at each look

    def __init__(self, run_dir: Path, port: int | None = None, overrides: dict[str, str] | None = None,
                 jvm_options: list[str] | None = None, features: dict[str, int] | None = None,
                 extra_listeners: dict[str, str] | None = None):
        self.run_dir = Path(run_dir)
        # listener name -> security protocol, each on a port of its own beside PLAINTEXT (tests/security)
        # distinct ports for every listener: Kafka refuses two listeners on one port
        chosen = free_ports(len(extra_listeners or {}) + 2)
        self.extra_ports = dict(zip(extra_listeners or {}, chosen[2:], strict=True))
        self.extra_listeners = dict(extra_listeners or {})
        self.features = dict(features or {})  # kafka-storage format --feature name=level
        self.jvm_options = list(JVM_OPTIONS if jvm_options is None else jvm_options)  # the broker's JVM
        self.port = port or chosen[0]
        self.controller_port = chosen[1]
        self.overrides = dict(overrides or {})
        self.process: subprocess.Popen | None = None
        self.startup_seconds: list[float] = []  # one per start(), the first after formatting
        self.format_seconds: float | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.run_dir / "server.log"

    @property
    def data_dir(self) -> Path:
        return self.run_dir / "data"

    def bootstrap_for(self, listener: str) -> str:
        return self.bootstrap if listener == "PLAINTEXT" else f"127.0.0.1:{self.extra_ports[listener]}"

    def settings(self) -> dict[str, str]:
        extra = "".join(f",{name}://127.0.0.1:{port}" for name, port in self.extra_ports.items())
        protocols = "".join(f",{name}:{protocol}" for name, protocol in self.extra_listeners.items())
        return {
            "process.roles": "broker,controller",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}{extra}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}{extra}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT{protocols}",
            "log.dirs": str(self.data_dir),
            **SHARED_TEST_SETTINGS, **KAFKA_ONLY_SETTINGS, **self.overrides,
        }

    def _java(self, main_class: str, *args: str, jvm_options: list[str] = JVM_OPTIONS) -> list[str]:
        return ["java", *jvm_options, f"-Dkafka.logs.dir={self.run_dir}",
                f"-Dlog4j2.configurationFile={LOG_CONFIG}", "-cp", classpath(), main_class, *args]

    def _write_properties(self) -> Path:
        path = self.run_dir / "server.properties"
        path.write_text("".join(f"{name}={value}\n" for name, value in self.settings().items()))
        return path

    def _format_storage(self, properties: Path) -> None:
        began = time.monotonic()
        features = [arg for name, level in self.features.items() for arg in ("--feature", f"{name}={level}")]
        result = subprocess.run(self._java("kafka.tools.StorageTool", "format", "--standalone",
                                           "--cluster-id", random_cluster_id(), "--config", str(properties),
                                           *features),
                                timeout=120, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"Kafka's StorageTool failed ({result.returncode}):\n{result.stdout}{result.stderr}")
        self.format_seconds = time.monotonic() - began

    def start(self, timeout: float = 120.0) -> KafkaProcess:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        properties = self._write_properties()
        if not (self.data_dir / "meta.properties").exists():
            self._format_storage(properties)
        began = time.monotonic()
        with open(self.run_dir / "console.log", "ab") as console:
            self.process = subprocess.Popen(self._java("kafka.Kafka", str(properties),
                                                       jvm_options=self.jvm_options), cwd=self.run_dir,
                                            stdout=console, stderr=subprocess.STDOUT)
        self.await_ready(self._answers_metadata, "Kafka", began + timeout, poll=0.1)
        self.startup_seconds.append(time.monotonic() - began)
        return self

    def _answers_metadata(self) -> bool:
        """Ready once the broker lists itself in a Metadata answer on its client listener."""
        codec = ClientConnection("weir-reference-probe")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2.0) as sock:
                sock.sendall(codec.send_request(ApiKey.METADATA, 12, metadata.REQUEST(topics=[])))
                while True:
                    data = sock.recv(65536)
                    if not data:
                        return False
                    answers = codec.receive_data(data)
                    if answers:
                        return bool(answers[0].brokers)
        except OSError:
            return False

    @property
    def lines(self) -> list[str]:
        try:
            return self.log_file.read_text(errors="replace").splitlines(keepends=True)
        except FileNotFoundError:
            return []

    def tail(self, count: int = 30) -> str:
        console = self.run_dir / "console.log"
        extra = console.read_text(errors="replace") if console.exists() else ""
        return "".join(self.lines[-count:]) + extra[-4000:]
