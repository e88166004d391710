"""What MirrorMaker 2 and a Connect worker share as child processes of the tests: the Connect
4.3.1 classpath of reference/mirror/pom.xml, a properties file written from a dict, and one log
file (stdout and stderr) in the run directory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from reference.kafka import REPO
from weir.testing.process import ChildProcess

POM = REPO / "reference" / "mirror" / "pom.xml"
CLASSPATH_FILE = REPO / "reference" / "mirror" / "target" / "classpath.txt"
LOG_CONFIG = REPO / "reference" / "log4j2-mirror.properties"


def classpath() -> str:
    """The jars, resolved by Maven from reference/mirror/pom.xml when the pom is newer."""
    if not CLASSPATH_FILE.exists() or CLASSPATH_FILE.stat().st_mtime < POM.stat().st_mtime:
        build = subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(POM), "dependency:build-classpath",
                                f"-Dmdep.outputFile={CLASSPATH_FILE}"], capture_output=True, text=True, timeout=600)
        if build.returncode != 0:
            raise RuntimeError(f"resolving reference/mirror/pom.xml failed:\n{build.stdout}{build.stderr}")
        CLASSPATH_FILE.touch()  # the plugin leaves an unchanged file's time as it was
    return os.pathsep.join(CLASSPATH_FILE.read_text().strip().split(os.pathsep))


class ConnectProcess(ChildProcess):
    """``start()`` writes ``settings`` to ``<name>.properties`` and runs ``main_class`` on it."""

    main_class = ""
    name = ""

    def __init__(self, run_dir: Path, settings: dict[str, str]):
        self.run_dir = Path(run_dir)
        self.settings = settings

    @property
    def log_file(self) -> Path:
        return self.run_dir / f"{self.name}.log"

    @property
    def lines(self) -> list[str]:
        try:
            return self.log_file.read_text(errors="replace").splitlines(keepends=True)
        except FileNotFoundError:
            return []

    def start(self) -> ConnectProcess:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        properties = self.run_dir / f"{self.name}.properties"
        properties.write_text("".join(f"{name}={value}\n" for name, value in self.settings.items()))
        command = ["java", "-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   f"-Dlog4j2.configurationFile={LOG_CONFIG}", "-cp", classpath(), self.main_class, str(properties)]
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(command, cwd=self.run_dir, stdout=log, stderr=subprocess.STDOUT)
        return self

    def tail(self, count: int = 40) -> str:
        return "".join(self.lines[-count:])
