"""Transactional produce throughput and commits per second: Weir next to Tansu, same load, one run.

- throughput: fixed-size values (1 KiB), one transactional producer
  (confluent-kafka), a commit every ``--per-txn`` messages (10,000), MB/s from
  the first send until the last commit returns;
- commits/s: one-message transactions back to back (begin, produce, commit),
  the coordinator round trips that every exactly-once pipeline pays;
- N-producer commits/s: ``--producers`` (16) such producers at once, which
  measures the coordinator rather than one client's round trips.

    python -m bench.transactions [--messages 200000] [--per-txn 10000] [--commits 1000] [--rounds 3]

Rounds alternate the brokers; medians are printed with the ratio.

``--per-transaction`` measures instead what one transaction costs at each transaction version
(KIP-890 part 2), with our client (librdkafka speaks version 1 only): Weir at version 2 (its
default), Weir started at version 1 and Kafka at version 2 (its default), ``--peers
weir,weir-tv1,kafka``. A transaction writes one record to each of ``--txn-partitions`` (2)
partitions and commits: at version 1 that is AddPartitionsToTxn, Produce, EndTxn; at version 2
Produce v12 (the leader adds the partitions through the coordinator) and EndTxn v5 (the epoch
bumped). Reported: wall ms per transaction and the broker's CPU ms per transaction.

    python -m bench.transactions --per-transaction [--transactions 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time

from confluent_kafka import Producer

from bench.peers import add_arguments
from bench.throughput import compare, cpu_seconds, create_topic


def transactional_producer(bootstrap: str, txn_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5,
                         "queue.buffering.max.kbytes": 1048576, "queue.buffering.max.messages": 1000000})
    producer.init_transactions(30)
    return producer


def txn_throughput(bootstrap: str, topic: str, messages: int, per_txn: int, size: int) -> float:
    producer = transactional_producer(bootstrap, "bench-throughput")
    payload = os.urandom(size)
    chunk = [{"value": payload}] * per_txn
    began = time.monotonic()
    sent = 0
    while sent < messages:
        producer.begin_transaction()
        batch = chunk[:messages - sent]
        queued = 0
        while queued < len(batch):
            try:
                queued += producer.produce_batch(topic, batch[queued:])
            except BufferError:
                pass
            producer.poll(0 if queued == len(batch) else 0.01)
        producer.commit_transaction(60)
        sent += len(batch)
    elapsed = time.monotonic() - began
    producer.close()
    return messages * size / elapsed / 1e6


def commits_per_second(bootstrap: str, topic: str, commits: int) -> float:
    producer = transactional_producer(bootstrap, "bench-commits")
    for _ in range(20):  # warm-up: connections, metadata, coordinator lookup
        producer.begin_transaction()
        producer.produce(topic, value=b"warm-up")
        producer.commit_transaction(30)
    began = time.monotonic()
    for i in range(commits):
        producer.begin_transaction()
        producer.produce(topic, value=b"%d" % i)
        producer.commit_transaction(30)
    elapsed = time.monotonic() - began
    producer.close()
    return commits / elapsed


def concurrent_commits_per_second(bootstrap: str, topic: str, producers: int, commits: int) -> float:
    """``producers`` transactional producers in threads (librdkafka's calls release the GIL),
    each committing ``commits`` one-message transactions: the coordinator's rate, not one client's."""
    clients = [transactional_producer(bootstrap, f"bench-concurrent-{i}") for i in range(producers)]
    for producer in clients:  # warm-up, as above
        producer.begin_transaction()
        producer.produce(topic, value=b"warm-up")
        producer.commit_transaction(30)
    start = threading.Barrier(producers + 1)
    errors = []

    def commit_loop(producer):
        start.wait()
        try:
            for i in range(commits):
                producer.begin_transaction()
                producer.produce(topic, value=b"%d" % i)
                producer.commit_transaction(30)
        except Exception as exc:  # reported below: a failed run must not pass for a slow one
            errors.append(exc)

    threads = [threading.Thread(target=commit_loop, args=(p,)) for p in clients]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.monotonic()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    for producer in clients:
        producer.close()
    if errors:
        raise RuntimeError(f"{len(errors)} producers failed, first: {errors[0]!r}")
    return producers * commits / elapsed


async def _ours_per_transaction(bootstrap: str, topic: str, transactions: int, partitions: int) -> tuple[float, int]:
    """(seconds for ``transactions`` transactions after a warm-up, the transaction version they ran at)."""
    from weir.client import Producer
    async with Producer(bootstrap, transactional_id="bench-per-transaction") as producer:
        for round_ in range(20 + transactions):
            if round_ == 20:  # warm-up done: connections, metadata, coordinator lookup
                began = time.monotonic()
            async with producer.transaction():
                for partition in range(partitions):
                    await producer.send(topic, b"%d" % round_, partition=partition)
        return time.monotonic() - began, producer.transaction_manager.transaction_version


def run_per_transaction(broker, args) -> dict:
    create_topic(broker.bootstrap, "txn-per-transaction", args.txn_partitions)
    pid = broker.process.pid
    cpu_before = cpu_seconds(pid)
    seconds, version = asyncio.run(_ours_per_transaction(broker.bootstrap, "txn-per-transaction",
                                                         args.transactions, args.txn_partitions))
    cpu = cpu_seconds(pid) - cpu_before  # the warm-up's 20 transactions included (under 7% at 300)
    print(f"  {broker.name} ran transaction.version {version}; load average {os.getloadavg()[0]:.1f}", flush=True)
    return {"ms/txn": seconds * 1000 / args.transactions, "broker CPU ms/txn": cpu * 1000 / args.transactions}


def run(broker, args) -> dict:
    create_topic(broker.bootstrap, "txn-bench", 1)
    create_topic(broker.bootstrap, "txn-commits", 1)
    # commits first: on Weir the bulk phase leaves page-cache writeback running that would
    # slow the small writes measured next; Tansu keeps everything in memory.
    # The broker's CPU per transaction (the coordinator's share of a commit's round trips; the
    # warm-up transactions are counted too: 2% more for the one producer, under 1% for the many).
    pid = broker.process.pid
    began = cpu_seconds(pid)
    commits = commits_per_second(broker.bootstrap, "txn-commits", args.commits)
    single_cpu = cpu_seconds(pid) - began
    create_topic(broker.bootstrap, "txn-concurrent", 1)
    began = cpu_seconds(pid)
    concurrent = concurrent_commits_per_second(broker.bootstrap, "txn-concurrent", args.producers,
                                               args.concurrent_commits)
    concurrent_cpu = cpu_seconds(pid) - began
    throughput = txn_throughput(broker.bootstrap, "txn-bench", args.messages, args.per_txn, args.size)
    return {"txn produce MB/s": throughput, "commits/s": commits, f"{args.producers}-producer commits/s": concurrent,
            "broker CPU ms/commit": single_cpu * 1000 / args.commits,
            f"{args.producers}-producer broker CPU ms/commit":
                concurrent_cpu * 1000 / (args.producers * args.concurrent_commits)}


def bench_results(argv=None) -> dict:
    """The run ``main`` prints, its figures returned (``summarise``): for bench/report.py."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--per-txn", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--producers", type=int, default=16)
    parser.add_argument("--concurrent-commits", type=int, default=150, help="per producer")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-transaction", action="store_true",
                        help="the cost of one transaction per transaction version, our client (see above)")
    parser.add_argument("--transactions", type=int, default=300, help="with --per-transaction")
    parser.add_argument("--txn-partitions", type=int, default=2, help="with --per-transaction")
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.per_transaction:
        if args.peers == parser.get_default("peers"):
            args.peers = "weir,weir-tv1,kafka"
        print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        summary = compare(run_per_transaction, args, f"{args.transactions} transactions of one record to each of "
                                                     f"{args.txn_partitions} partitions; our client (weir = version 2)")
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        return summary
    return compare(run, args, f"{args.messages} x {args.size} B committed every {args.per_txn}; "
                              f"{args.commits} one-message transactions; confluent-kafka")


def main(argv=None) -> int:
    bench_results(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
