"""Time from asking for a broker to the first acknowledged idempotent record: ``weir.run_broker()``
in a fresh interpreter against Apache Kafka (KRaft, one node, the version of reference/pom.xml)
started the usual way: storage formatted by Kafka's StorageTool, then ``kafka.Kafka server.properties``.

    python -m bench.fixture_startup [--rounds 5] [--kafka-rounds 3] [--kafka-jvm production|test]

The bar (issue 32, item 3): Weir's cold start plus the record takes at most 0.1x Kafka's.

- Weir, cold: each round is a new interpreter (a subprocess) that imports confluent-kafka, then
  starts the clock, imports ``weir.testing.process``, enters ``run_broker()`` (which starts the
  zygote, weir/testing/zygote.py, and forks the broker from it: nothing warm is reused) and sends
  one record; the clock stops when it is acknowledged.
- Kafka: the clock starts, storage is formatted, the JVM launched, the same record sent; the
  producer is made right after the launch, so librdkafka's reconnects find Kafka once it listens.
- The record, both sides: a confluent-kafka producer (acks=all, enable.idempotence=true) to a
  topic the broker auto-creates (InitProducerId, Metadata, Produce).
- Rounds of the two alternate, so a load that comes and goes hits both alike.
- Second and third lines: the ``weir_broker`` fixture once this process's zygote is warm (what
  every broker after a test session's first costs) and the in-loop ``weir.Broker``.

Our own sources are compiled to bytecode first (``compileall``), as installing a wheel does: with
PYTHONDONTWRITEBYTECODE set, as on our machines, nothing else would, and each round would spend
~0.3 s compiling ~300 modules.

Figures (2026-11-28 10:26 UTC, 2 cores shared with other engineers' jobs, load average 1.1-1.4,
production JVM, 5 Weir and 3 Kafka rounds):

    weir.run_broker() cold, fresh interpreter, to first idempotent record: median 384 ms, min 358,
      max 414 (up 276 ms, record 108 ms); before issue 32's work ~1.45 s (up ~0.9, record 0.52)
    Apache Kafka 4.4.0 format + start + the same record: median 4597 ms (format 1053 ms)
    ratio 0.084 (bar: at most 0.1); weir_broker fixture, warm zygote: 126 ms; weir.Broker in loop: 109 ms

Quiet machine (2026-11-28 11:12 UTC, nothing else running, load 0.2-0.4): cold run_broker() to the
record median 424 ms (min 369, max 446; up 317 ms, record 109 ms); Kafka 4.4.0 5,098 ms (format
1,133 ms); ratio 0.083; warm fixture 124 ms, weir.Broker in loop 109 ms.

Side by side at load 0.5 (a cold round's script by hand, 3 rounds each): before issue 32's work
1.36-1.53 s without our bytecode (up 0.82-0.97 s, record 0.53 s), 0.91 s with it; now 0.64-0.71 s
without (up 0.51-0.58 s: ratio ~0.14, over the bar) and 0.36-0.38 s with (up 0.24-0.26 s).

The record's ~108 ms are librdkafka's own waits (~45 ms before it connects to the broker the first
Metadata named, ~50 ms before it asks that broker again for the auto-created topic); against a
running Kafka the same first record to a new topic takes ~107 ms.

Kafka needs ``make reference`` (its jars' classpath in reference/target/classpath.txt).
``--kafka-jvm production`` gives the JVM what kafka-server-start.sh does (1 GiB heap, G1);
``test`` the small heap, serial GC and C1 only that the test suite's reference broker uses.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import compileall
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
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
SOURCES = ("protocol", "broker", "client", "pipeline", "weir")
#: Every producer of this benchmark. log_level 2: librdkafka keeps quiet about the refused connections
#: before Kafka listens; the short reconnect backoff finds it once it does (Weir listens before).
PRODUCER = {"acks": "all", "enable.idempotence": True, "log_level": 2,
            "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 100}

# The cold round's interpreter: confluent-kafka imported before the clock starts (the Kafka rounds
# have it imported too), then weir.testing.process, run_broker() and the record.
COLD_ROUND = """
import json, sys, threading, time
import confluent_kafka
producer_config = json.loads(sys.argv[1])
began = time.monotonic()
from weir.testing.process import run_broker
with run_broker() as broker:
    up = time.monotonic()
    delivered, errors = threading.Event(), []
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, **producer_config})
    producer.produce("first-produce", b"first", on_delivery=lambda error, _: (errors.append(error), delivered.set()))
    deadline = up + 60
    while not delivered.is_set() and time.monotonic() < deadline:
        producer.poll(0.01)
    done = time.monotonic()
    if errors != [None]:
        raise SystemExit(f"the first produce failed: {errors or 'timed out'}")
print(json.dumps({"up": up - began, "record": done - up, "total": done - began}))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def first_produce(bootstrap: str, topic: str = "first-produce") -> None:
    """One idempotent record, acks=all, to a topic the broker creates on first use; returns once acknowledged."""
    delivered = threading.Event()
    errors: list = []

    def on_delivery(error, _message) -> None:
        if error is not None:
            errors.append(error)
        delivered.set()

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, **PRODUCER})
    producer.produce(topic, b"first", on_delivery=on_delivery)
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while not delivered.is_set() and time.monotonic() < deadline:
        producer.poll(0.01)
    if errors or not delivered.is_set():
        raise RuntimeError(f"the first produce to {bootstrap} failed: {errors or 'timed out'}")


def weir_cold_round() -> dict[str, float]:
    """A fresh interpreter's ``run_broker()`` to the first acknowledged record: its up, record, total."""
    # WEIR_BROKER_ZYGOTE unset: the child starts its zygote, as a user's test process does
    env = {name: value for name, value in os.environ.items() if name != "WEIR_BROKER_ZYGOTE"}
    done = subprocess.run([sys.executable, "-P", "-c", COLD_ROUND, json.dumps(PRODUCER)], cwd=tempfile.gettempdir(),
                          env=env, capture_output=True, text=True, timeout=DELIVERY_TIMEOUT_S)
    if done.returncode:
        raise RuntimeError(f"the cold round failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def weir_fixture_round(pool) -> float:
    """The weir_broker fixture's start (``BrokerPool.get``) to the first record, with this process's zygote."""
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
    """(seconds to format, seconds from the clock's start to the first acknowledged record)."""
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


def load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each Weir form")
    parser.add_argument("--kafka-rounds", type=int, default=3, help="rounds of Apache Kafka (0: none)")
    parser.add_argument("--kafka-jvm", choices=sorted(JVM), default="production")
    args = parser.parse_args(argv)
    if args.kafka_rounds and not CLASSPATH_FILE.exists():
        raise SystemExit("Apache Kafka's classpath is missing: run `make reference` first")
    for folder in SOURCES:  # bytecode, as a wheel install leaves it (see the module's docstring)
        compileall.compile_dir(REPO / folder, quiet=1)
    print(f"start: {load()}", flush=True)

    cold: list[dict[str, float]] = []
    kafka: list[tuple[float, float]] = []
    for index in range(max(args.rounds, args.kafka_rounds)):  # interleaved
        if index < args.rounds:
            cold.append(weir_cold_round())
            print(f"  weir cold: up {cold[-1]['up'] * 1000:.0f} ms, record {cold[-1]['record'] * 1000:.0f} ms, "
                  f"total {cold[-1]['total'] * 1000:.0f} ms ({load()})", flush=True)
        if index < args.kafka_rounds:
            kafka.append(kafka_round(args.kafka_jvm))
            print(f"  kafka: format {kafka[-1][0]:.2f} s, total {kafka[-1][1]:.2f} s ({load()})", flush=True)

    from weir.testing.plugin import BrokerPool
    weir_fixture_round(BrokerPool())  # starts this process's zygote: the rounds below find it warm
    warm = [weir_fixture_round(BrokerPool()) for _ in range(args.rounds)]
    in_loop = [weir_in_loop_round() for _ in range(args.rounds)]

    cold_total = [round_["total"] for round_ in cold]
    print(summary("weir.run_broker() cold, fresh interpreter, to first idempotent record", cold_total))
    print(f"  of which up (run_broker() yields) median {statistics.median(r['up'] for r in cold) * 1000:.0f} ms, "
          f"record median {statistics.median(r['record'] for r in cold) * 1000:.0f} ms")
    print(summary("weir_broker fixture, warm zygote, to first idempotent record", warm))
    print(summary("weir.Broker (in this loop) to first idempotent record", in_loop))
    if kafka:
        total = [t for _, t in kafka]
        print(summary(f"Apache Kafka KRaft ({args.kafka_jvm} JVM) format", [f for f, _ in kafka]))
        print(summary(f"Apache Kafka KRaft ({args.kafka_jvm} JVM) format + start + first idempotent record", total))
        ratio = statistics.median(cold_total) / statistics.median(total)
        print(f"ratio (medians): cold weir.run_broker() takes {ratio:.3f} of Kafka's time (bar: at most 0.1)")
    print(f"end: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
