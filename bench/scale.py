"""Scale: many partitions, connections, group members and transactional producers; Weir next to
Tansu and Apache Kafka (bench/peers.py), each round a fresh broker of each peer.

Scenarios, in this order on each broker (sizes are options; the defaults run in a few minutes):

- connections (``--connections`` 1,000, ``--requests`` 10 each): idle RSS per connection, then
  every connection sending ApiVersions and Metadata in turn at once: latency p50/p99/max and
  requests/s (bench/scale_clients.py);
- group (``--members`` 100, aiokafka, classic protocol): seconds until all members own
  ``--group-partitions`` (200) partitions, then until one member more is taken in;
- transactional producers (``--txn-producers`` 1,000 of our client, ``--txn-commits`` 3 each):
  initialisations/s and commits/s with all of them at once;
- wide produce and fetch (``--wide-partitions`` 1,000, ``--wide-records`` 100,000 of 1 KiB,
  librdkafka as bench/throughput.py loads and reads): MB/s;
- partitions (``--partitions`` 10,000 in topics of ``--per-topic`` 100): seconds from
  CreateTopics until every partition answers, one full
  (all-topic) Metadata request's time to its last byte (median of 3), RSS per partition, and
  start-up with them: a clean stop, then seconds from spawn until they all answer again.
  A partition counts as there once it answers ListOffsets: Kafka lists partitions in Metadata
  before it has made their logs.

    python -m bench.scale [--rounds 1] [--peers weir,tansu,kafka] [--scenarios connections,group,txn,wide,partitions]

Weir runs with group.initial.rebalance.delay.ms 0, as the Kafka of bench/peers.py does
(reference/kafka.py SHARED_TEST_SETTINGS): with Weir's default of 3 s the group figure would
measure the delay. The soft RLIMIT_NOFILE of this process (and so of the brokers it starts) is
raised to the hard limit: a thousand connections and ten thousand partitions need descriptors.
A figure a peer cannot give is printed n/a with the reason (Tansu keeps its data in memory, so
it has no start-up with partitions).

Measured for issue 23 (2026-11-26, three interleaved rounds, the 2-core machine with nothing else
running, load 1.5-2.3): Weir ahead of Kafka in every figure -- requests/s on 1,000 connections
2.1x, request p99 0.48x, broker CPU per request 0.31x, idle RSS per connection 0.84x, 100 members
joined 0.73x, one member more 0.94x, transactional inits/s 2.2x and commits/s 3.6x, produce and
fetch over 1,000 partitions 2.0x and 1.5x; 10,000 partitions created in 6.4 s (Kafka 44.5 s),
started with in 4.5 s (55.5 s), 2.7 KiB of RSS a partition (9.3; the JVM's heap is committed up
front) and a full Metadata answer in 1.8 ms (23.3 ms) since a topic's partition entries are built
once and encoded once per version (broker/handlers/metadata.py, schema.FrozenArray; 19-39 ms
before). Tansu times out in AddPartitionsToTxn with 1,000 transactional producers and takes 25 s
for each rebalance of the group.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import resource
import socket
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import list_offsets, metadata

from bench import scale_clients
from bench.throughput import Broker, compare, cpu_seconds, create_topic, fetch, produce, rss_mib

Figures = dict[str, float | str]  # a figure, or why a peer cannot give it (n/a)

SCENARIOS = ("connections", "group", "txn", "wide", "partitions")
DEADLINE_S = 600.0  # for the partitions to be created or loaded; past it the figure is n/a


def raise_open_files_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def full_metadata(port: int) -> tuple[float, object]:
    """One Metadata request for every topic on a fresh connection: (seconds to the answer's last
    byte, the answer). Timed before decoding, which is this process's cost, not the broker's."""
    codec = ClientConnection("weir-bench-scale")
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        frame = codec.send_request(ApiKey.METADATA, scale_clients.METADATA_V,
                                   metadata.REQUEST(topics=None, allow_auto_topic_creation=False))
        began = time.monotonic()
        sock.sendall(frame)
        received = bytearray()
        while len(received) < 4 or len(received) < 4 + int.from_bytes(received[:4], "big"):
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            received += chunk
        elapsed = time.monotonic() - began
    return elapsed, codec.receive_data(bytes(received))[0]


def serving_partitions(port: int, topics: dict[str, int]) -> int:
    """How many partitions of ``topics`` (name: partition count) answer a ListOffsets (latest)
    without an error: their logs exist and are loaded. Kafka lists a partition's leader in
    Metadata before its broker has made the log, so Metadata alone would flatter it."""
    codec = ClientConnection("weir-bench-scale")
    request = list_offsets.REQUEST(replica_id=-1, isolation_level=0, topics=[
        list_offsets.RequestTopic(name=name, partitions=[
            list_offsets.RequestPartition(partition_index=index, timestamp=-1) for index in range(count)])
        for name, count in topics.items()])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
            sock.sendall(codec.send_request(ApiKey.LIST_OFFSETS, 7, request))
            answers: list[Any] = []
            while not answers:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    return 0
                answers = codec.receive_data(chunk)
    except OSError:  # not listening yet (start-up)
        return 0
    return sum(1 for topic in answers[0].topics for partition in topic.partitions if partition.error_code == 0)


def wait_for_partitions(port: int, topics: dict[str, int]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    expected = sum(topics.values())
    while True:
        began = time.monotonic()
        serving = serving_partitions(port, topics)
        if serving >= expected:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{serving} of {expected} partitions served after {DEADLINE_S:g} s")
        # a deadline-bounded poll, spaced so that answering it takes at most a fifth of the broker's time
        time.sleep(max(0.1, 4 * (time.monotonic() - began)))


def create(broker: Broker, topic: str, partitions: int) -> None:
    """Create ``topic`` and wait until Metadata gives every partition a leader (Kafka answers
    CreateTopics before its metadata has them)."""
    create_topic(broker.bootstrap, topic, partitions)
    wait_for_partitions(broker.port, {topic: partitions})


def partitions_scenario(broker: Broker, args: argparse.Namespace) -> Figures:
    from bench.peers import restart
    prefix, per_topic = "scale-many-", min(args.per_topic, args.partitions)
    topics = [NewTopic(f"{prefix}{number:05d}", num_partitions=per_topic, replication_factor=1)
              for number in range(args.partitions // per_topic)]
    total = per_topic * len(topics)
    counts = {topic.topic: per_topic for topic in topics}
    rss_before = rss_mib(broker.process.pid)
    began = time.monotonic()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    # Kafka refuses a CreateTopics whose records (a topic's and each partition's) pass 10,000:
    # POLICY_VIOLATION "Unable to perform excessively large batch operation" (one KRaft batch)
    step = max(1, 5000 // per_topic)
    for first in range(0, len(topics), step):
        for future in admin.create_topics(topics[first:first + step], operation_timeout=DEADLINE_S,
                                          request_timeout=DEADLINE_S).values():
            future.result(DEADLINE_S)
    wait_for_partitions(broker.port, counts)
    figures: Figures = {"partitions: create s": time.monotonic() - began}
    figures["partitions: full Metadata ms"] = statistics.median(
        full_metadata(broker.port)[0] for _ in range(3)) * 1000
    figures["partitions: RSS KiB/partition"] = (rss_mib(broker.process.pid) - rss_before) * 1024 / total
    spawned = restart(broker)
    if isinstance(spawned, str):
        figures["partitions: start-up s"] = spawned
    else:
        wait_for_partitions(broker.port, counts)
        figures["partitions: start-up s"] = time.monotonic() - spawned
    return figures


def wide_scenario(broker: Broker, args: argparse.Namespace) -> Figures:
    create(broker, "scale-wide", args.wide_partitions)
    return {"wide: produce MB/s": produce(broker.bootstrap, "scale-wide", args.wide_records, 1024),
            "wide: fetch MB/s": fetch(broker.bootstrap, "scale-wide", args.wide_partitions, args.wide_records, 1024)}


def _child(scenario: Callable[..., Coroutine[Any, Any, Figures]], arguments: tuple[Any, ...],
           results: multiprocessing.Queue[Figures | str]) -> None:
    try:
        results.put(asyncio.run(scenario(*arguments)))
    except Exception as exc:  # handed to the parent, which reports it as n/a
        results.put(f"{type(exc).__name__}: {exc}"[:300])


def in_child(scenario: Callable[..., Coroutine[Any, Any, Figures]], arguments: tuple[Any, ...]) -> Figures:
    """A many-client scenario in a fresh process: a thousand clients' leftovers (objects the
    collector then walks, sockets closing) slowed the librdkafka load generated after them in
    the same process 2-5x, which the next scenario's figures would have shown as the broker's."""
    results: multiprocessing.Queue[Figures | str] = multiprocessing.get_context("spawn").Queue()
    child = multiprocessing.get_context("spawn").Process(target=_child, args=(scenario, arguments, results))
    child.start()
    try:
        outcome = results.get(timeout=DEADLINE_S)
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()
    if isinstance(outcome, str):
        raise RuntimeError(outcome)
    return outcome


def connections_scenario(broker: Broker, args: argparse.Namespace) -> Figures:
    create(broker, "scale-connections", 1)
    began = cpu_seconds(broker.process.pid)
    figures: Figures = in_child(scale_clients.connections, (
        broker.port, broker.process.pid, args.connections, args.requests, "scale-connections", args.deadline))
    # the broker's own cost, steadier than latency on a shared machine (the connects counted too)
    figures["connections: broker CPU ms/1000 requests"] = (cpu_seconds(broker.process.pid) - began) * 1e6 / (
        args.connections * (args.requests + 1))
    return figures


def group_scenario(broker: Broker, args: argparse.Namespace) -> Figures:
    create(broker, "scale-group", args.group_partitions)
    return in_child(scale_clients.group, (broker.bootstrap, "scale-group", args.group_partitions, args.members,
                                           args.deadline))


def txn_scenario(broker: Broker, args: argparse.Namespace) -> Figures:
    create(broker, "scale-txn", 1)
    return in_child(scale_clients.transactional_producers, (broker.bootstrap, "scale-txn", args.txn_producers,
                                                             args.txn_commits, args.deadline))


RUNNERS = {"connections": (connections_scenario, ("connections: idle RSS KiB/connection", "connections: requests/s")),
           "group": (group_scenario, ("group: all members joined s", "group: one member more s")),
           "txn": (txn_scenario, ("txn producers: init/s", "txn producers: commits/s")),
           "wide": (wide_scenario, ("wide: produce MB/s", "wide: fetch MB/s")),
           "partitions": (partitions_scenario, ("partitions: create s", "partitions: start-up s"))}


def run(broker: Broker, args: argparse.Namespace) -> Figures:
    """Every chosen scenario on one broker; a scenario that fails gives its figures as n/a with
    the reason, and the next one runs (on the same broker, which it may have left loaded)."""
    figures: Figures = {}
    loads = []
    for name in args.scenario_names:
        scenario, headline = RUNNERS[name]
        began = time.monotonic()
        try:
            figures.update(scenario(broker, args))
        except Exception as exc:  # reported as n/a: one peer's failure must not hide the others' figures
            reason = f"{type(exc).__name__}: {exc}"[:300]
            print(f"  {broker.name} {name} failed: {reason}", flush=True)
            figures.update(dict.fromkeys(headline, reason))
        loads.append(os.getloadavg()[0])
        print(f"  {broker.name} {name}: {time.monotonic() - began:.1f} s, load {loads[-1]:.1f}", flush=True)
    figures["load (1 min)"] = sum(loads) / len(loads)
    return figures


def bench_results(argv: list[str] | None = None) -> dict[str, Any]:
    """The run ``main`` prints, its figures returned (``summarise``): for bench/report.py."""
    from bench.peers import add_arguments
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--per-topic", type=int, default=100)
    parser.add_argument("--wide-partitions", type=int, default=1000)
    parser.add_argument("--wide-records", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=10, help="per connection")
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--group-partitions", type=int, default=200)
    parser.add_argument("--txn-producers", type=int, default=1000)
    parser.add_argument("--txn-commits", type=int, default=3, help="per producer")
    parser.add_argument("--deadline", type=float, default=120.0,
                        help="seconds a client scenario may take on one broker before its figures are n/a")
    parser.add_argument("--rounds", type=int, default=1)
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.scenario_names = args.scenarios.split(",")
    unknown = set(args.scenario_names) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios {sorted(unknown)}")
    # Weir's max.broker.partitions defaults to what its open-file budget keeps open (half the open
    # files limit: 10,000 partitions at this machine's 20,000), which the scenarios together pass
    # (1,000 wide + the group's + 10,000); Kafka has no such bound, so neither has Weir here.
    hosted = args.partitions + args.wide_partitions + args.group_partitions + 1000  # + internal topics' and slack
    args.weir_args = ("--override", "group.initial.rebalance.delay.ms=0",
                      "--override", f"max.broker.partitions={hosted}")
    descriptors = raise_open_files_limit()
    print(f"load average at start: {os.getloadavg()} on {os.cpu_count()} cores; open files limit {descriptors}",
          flush=True)
    summary = compare(run, args, f"{args.connections} connections x {args.requests} requests; {args.members}-member "
                                 f"group on {args.group_partitions} partitions; {args.txn_producers} transactional "
                                 f"producers x {args.txn_commits} commits; {args.wide_records} x 1 KiB over "
                                 f"{args.wide_partitions} partitions; {args.partitions} partitions "
                                 f"({args.per_topic} a topic)")
    print(f"load average at end: {os.getloadavg()}")
    return summary


def main(argv: list[str] | None = None) -> int:
    bench_results(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
