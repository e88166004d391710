"""MirrorMaker 2 in dedicated mode (``org.apache.kafka.connect.mirror.MirrorMaker``) as a child
process of the tests, one source cluster replicating into one target, with intervals of a second
so that topics, checkpoints and group offsets arrive within seconds."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from reference.kafka import REPO
from weir.testing.process import ChildProcess

POM = REPO / "reference" / "mirror" / "pom.xml"
CLASSPATH_FILE = REPO / "reference" / "mirror" / "target" / "classpath.txt"

LOG_CONFIG = REPO / "reference" / "log4j2-mirror.properties"
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"


def mm2_properties(source: str, target: str, topics: str, groups: str, identity: bool,
                   replication_factor: int = 1) -> dict[str, str]:
    """The settings of one source->target flow, exactly-once, every offset synced."""
    flow = "source->target"
    factor = str(replication_factor)
    return {
        "clusters": "source, target",
        "source.bootstrap.servers": source,
        "target.bootstrap.servers": target,
        f"{flow}.enabled": "true",
        "target->source.enabled": "false",
        f"{flow}.topics": topics,
        f"{flow}.groups": groups,
        "replication.policy.class": IDENTITY_POLICY if identity else DEFAULT_POLICY,
        # KIP-618: the target's Connect worker writes records and source offsets in one transaction
        "target.exactly.once.source.support": "enabled",
        "source.exactly.once.source.support": "enabled",
        # one offset sync per replicated record: the finest translation MM2 can give
        "offset.lag.max": "0",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1",
        "emit.checkpoints.interval.seconds": "1",
        "emit.heartbeats.interval.seconds": "1",
        "refresh.topics.interval.seconds": "1",
        "refresh.groups.interval.seconds": "1",
        "sync.topic.configs.interval.seconds": "1",
        "sync.topic.acls.enabled": "false",
        "tasks.max": "1",
        "replication.factor": factor,
        "checkpoints.topic.replication.factor": factor,
        "heartbeats.topic.replication.factor": factor,
        "offset-syncs.topic.replication.factor": factor,
        "config.storage.replication.factor": factor,
        "offset.storage.replication.factor": factor,
        "status.storage.replication.factor": factor,
    }


def classpath() -> str:
    """MM2's jars, resolved by Maven from reference/mirror/pom.xml when the pom is newer."""
    if not CLASSPATH_FILE.exists() or CLASSPATH_FILE.stat().st_mtime < POM.stat().st_mtime:
        build = subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(POM), "dependency:build-classpath",
                                f"-Dmdep.outputFile={CLASSPATH_FILE}"], capture_output=True, text=True, timeout=600)
        if build.returncode != 0:
            raise RuntimeError(f"resolving MirrorMaker 2 failed:\n{build.stdout}{build.stderr}")
        CLASSPATH_FILE.touch()  # the plugin leaves an unchanged file's time as it was
    jars = CLASSPATH_FILE.read_text().strip().split(os.pathsep)
    return os.pathsep.join(jars)


class MirrorMakerProcess(ChildProcess):
    """``start()`` launches MM2 and returns; callers wait on what it writes to the clusters."""

    kind = "mirror-maker"

    def __init__(self, run_dir: Path, settings: dict[str, str]):
        self.run_dir = Path(run_dir)
        self.settings = settings

    @property
    def log_file(self) -> Path:
        return self.run_dir / "mm2.log"

    @property
    def lines(self) -> list[str]:
        try:
            return self.log_file.read_text(errors="replace").splitlines(keepends=True)
        except FileNotFoundError:
            return []

    def start(self) -> MirrorMakerProcess:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        properties = self.run_dir / "mm2.properties"
        properties.write_text("".join(f"{name}={value}\n" for name, value in self.settings.items()))
        command = ["java", "-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   f"-Dlog4j2.configurationFile={LOG_CONFIG}", "-cp", classpath(),
                   "org.apache.kafka.connect.mirror.MirrorMaker", str(properties)]
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(command, cwd=self.run_dir, stdout=log, stderr=subprocess.STDOUT)
        return self

    def tail(self, count: int = 40) -> str:
        return "".join(self.lines[-count:])
