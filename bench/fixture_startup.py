"""Time from asking for a broker to the first acknowledged produce: Weir's pytest fixture
against Apache Kafka (KRaft, one node, the version of reference/pom.xml) started the usual
way: storage formatted by Kafka's StorageTool, then ``kafka.Kafka server.properties``.

    python -m bench.fixture_startup [--rounds 5] [--kafka-rounds 3] [--kafka-jvm production|test]

Each round: the clock starts; the broker is started (Weir: what the ``weir_broker`` fixture
does on first request, ``weir.testing.plugin.BrokerPool.get``; Kafka: format, then launch the
JVM); a confluent-kafka producer sends one record to a topic the broker auto-creates; the
clock stops when the delivery is acknowledged (acks=all). The producer is made right after
the launch, so librdkafka's own reconnects find the broker as soon as it listens. Weir's
in-loop ``weir.Broker`` is timed too (start in this process's loop, then the same produce).

Kafka needs ``make reference`` (its jars' classpath in reference/target/classpath.txt).
``--kafka-jvm production`` gives the JVM what kafka-server-start.sh does (1 GiB heap, G1);
``test`` the small heap, serial GC and C1 only that the test suite's reference broker uses.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import confluent_kafka

REPO = Path(__file__).resolve().parent.parent
CLASSPATH_FILE = REPO / "reference" / "target" / "classpath.txt"
LOG_CONFIG = REPO / "reference" / "log4j2.properties"
JVM = {
    "production": ["-Xms1g", "-Xmx1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                   "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                   "-Djava.awt.headless=true"],
    "test": ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"],
}
DELIVERY_TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def first_produce(bootstrap: str, topic: str = "first-produce") -> None:
    """One record, acks=all, to a topic the broker creates on first use; returns once acknowledged."""
    delivered = threading.Event()
    errors: list = []

    def on_delivery(error, _message) -> None:
        if error is not None:
            errors.append(error)
        delivered.set()

    # log_level 2: librdkafka keeps quiet about the refused connections before the broker listens
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 2,
                                         "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 100,
                                         "topic.metadata.refresh.interval.ms": 100})
    producer.produce(topic, b"first", on_delivery=on_delivery)
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while not delivered.is_set() and time.monotonic() < deadline:
        producer.poll(0.01)
    if errors or not delivered.is_set():
        raise RuntimeError(f"the first produce to {bootstrap} failed: {errors or 'timed out'}")


def weir_fixture_round() -> float:
    from weir.testing.plugin import BrokerPool

    pool = BrokerPool()
    began = time.monotonic()
    try:
        broker = pool.get(())  # what the weir_broker fixture does when a test first asks for it
        first_produce(broker.bootstrap_servers)
        return time.monotonic() - began
    finally:
        pool.close()


def weir_in_loop_round() -> float:
    import weir

    async def timed() -> float:
        began = time.monotonic()
        async with weir.Broker() as broker:
            # the blocking producer runs in a thread: this loop serves the broker
            await asyncio.to_thread(first_produce, broker.bootstrap_servers)
            return time.monotonic() - began
    return asyncio.run(timed())


def kafka_cluster_id() -> str:
    """A Kafka Uuid in text form (URL-safe base64 of 16 random bytes), not starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def kafka_round(jvm: str) -> tuple[float, float]:
    """(seconds to format, seconds from the clock's start to the first acknowledged produce)."""
    if not CLASSPATH_FILE.exists():
        raise SystemExit("Apache Kafka's classpath is missing: run `make reference` first")
    classpath = CLASSPATH_FILE.read_text().strip()
    run_dir = Path(tempfile.mkdtemp(prefix="kafka-startup-"))
    port, controller_port = free_port(), free_port()
    properties = run_dir / "server.properties"
    properties.write_text("".join(f"{name}={value}\n" for name, value in {
        "process.roles": "broker,controller", "node.id": 1,
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": run_dir / "data",
        # one node: the internal topics' replication as Kafka's own config/server.properties sets it
        "offsets.topic.replication.factor": 1, "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1, "share.coordinator.state.topic.replication.factor": 1,
        "share.coordinator.state.topic.min.isr": 1,
    }.items()))

    def java(main_class: str, *args: str) -> list[str]:
        return ["java", *JVM[jvm], f"-Dkafka.logs.dir={run_dir}", f"-Dlog4j2.configurationFile={LOG_CONFIG}",
                "-cp", classpath, main_class, *args]

    process = None
    began = time.monotonic()
    try:
        subprocess.run(java("kafka.tools.StorageTool", "format", "--standalone", "--cluster-id", kafka_cluster_id(),
                            "--config", str(properties)), check=True, capture_output=True, timeout=180)
        formatted = time.monotonic() - began
        with open(run_dir / "console.log", "wb") as console:
            process = subprocess.Popen(java("kafka.Kafka", str(properties)), cwd=run_dir, stdout=console,
                                       stderr=subprocess.STDOUT)
        first_produce(f"127.0.0.1:{port}")
        return formatted, time.monotonic() - began
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
        shutil.rmtree(run_dir, ignore_errors=True)


def summary(name: str, seconds: list[float]) -> str:
    return (f"{name}: median {statistics.median(seconds) * 1000:.0f} ms, "
            f"min {min(seconds) * 1000:.0f}, max {max(seconds) * 1000:.0f} ({len(seconds)} rounds)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each Weir form")
    parser.add_argument("--kafka-rounds", type=int, default=3, help="rounds of Apache Kafka (0: none)")
    parser.add_argument("--kafka-jvm", choices=sorted(JVM), default="production")
    args = parser.parse_args(argv)

    fixture = [weir_fixture_round() for _ in range(args.rounds)]
    print(summary("weir_broker fixture (child process) to first produce", fixture), flush=True)
    in_loop = [weir_in_loop_round() for _ in range(args.rounds)]
    print(summary("weir.Broker (in this loop) to first produce", in_loop), flush=True)
    if args.kafka_rounds:
        rounds = [kafka_round(args.kafka_jvm) for _ in range(args.kafka_rounds)]
        print(summary(f"Apache Kafka KRaft ({args.kafka_jvm} JVM) format", [f for f, _ in rounds]))
        total = [t for _, t in rounds]
        print(summary(f"Apache Kafka KRaft ({args.kafka_jvm} JVM) format + start + first produce", total))
        print(f"ratio (median): Kafka takes {statistics.median(total) / statistics.median(fixture):.0f}x "
              "as long as the weir_broker fixture")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
