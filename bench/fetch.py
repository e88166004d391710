"""Fetch throughput as a consumer that reads its records feels it: Weir next to Tansu and Kafka.

Each peer (bench/peers.py) gets topics of 1 and of 6 partitions, ``--records`` values of 1 KiB
each, written by librdkafka in ~1 MB batches: read_uncommitted reads a topic written plainly
(acks=all, the issue's load), read_committed one written by a transactional producer (a commit
every 10,000 records), so that it reads through transaction markers and the last stable offset.
Every client (bench/fetch_consumers.py, each in a process of its own) reads the topic back from
offset 0, touching every value; MB/s of values.

    python -m bench.fetch [--records 200000] [--rounds 3] [--peers weir,tansu,kafka]
                          [--clients librdkafka,librdkafka-fqb10,java,aiokafka,ours]
                          [--partitions 1,6] [--isolation read_uncommitted,read_committed]

Rounds alternate the peers; medians, spreads and Weir's ratios are printed with the
machine's 1-minute load average at each figure (``load``) and the broker's CPU seconds per GB
each client read (user + system, all threads): on a busy machine MB/s follows the load, CPU
per GB far less.

What librdkafka's figure measures (issue 23). librdkafka prefetches into a queue and, once that
queue holds ``queued.max.messages.kbytes`` (64 MiB) or ``queued.min.messages`` (100,000), stops
fetching the partition for a whole ``fetch.queue.backoff.ms`` (1,000 ms; rdkafka_fetcher.c,
rd_kafka_toppar_fetch_decide), not until the queue drains. A Python application reading values
takes the 64 MiB in ~0.15 s and then waits ~0.85 s. So with librdkafka's defaults the figure
falls when the broker answers *faster* than the application reads: Weir (10 MB answers back
to back) filled the queue and stalled for 0-2 backoffs per 500 MB read, Kafka's figure rose
as Weir's with the backoff at 10 ms, Tansu (slower answers) never filled the queue. The ``librdkafka`` client is run
with those defaults and
``librdkafka-fqb10`` with ``fetch.queue.backoff.ms`` 10 (librdkafka's CONFIGURATION.md: to be
decreased when the application sees ~1 s delays), which measures the brokers instead.

Measured for issue 23 (500,000 records, 1 partition, librdkafka 2.16 with ``debug=fetch``): from
Weir 52 answers of ~9.9 MB (ten ~1 MB batches), two "Fetch backoff for 1000ms" and 183 MB/s, and
0 backoffs and 815 MB/s in another run; from Tansu 87 answers of 5.3-5.9 MB, no backoff, 255-301
MB/s. Weir's side of the answer is not where the time goes: a 200 MB read took 74 sendfile
calls (2-8 MB each, 14 EAGAIN waits), one region per partition, so the bytes leave as fast as
the client's socket takes them.

Measured quiet (2026-11-26, 200,000 records, three interleaved rounds, nothing else running,
load 0.8-1.3): librdkafka read 1.4-2.6x Tansu's figure and 0.93-1.43x Kafka's from Weir
(1 partition read_uncommitted 552 / 259 / 419 MB/s); java, aiokafka and our client read about as
fast from all three (110-250 MB/s) while Weir spent 0.3-0.8 s of CPU per GB (Tansu 2.4-2.7, Kafka
0.9-3.4): those consumers are bounded by their own CPU, not by the broker -- one quiet round's
``client CPU share`` reading from Weir: aiokafka 0.9, ours 0.9 (from Tansu 0.7 and 0.8: there they
wait for the broker). The java figure at 200,000 records is the JVM warming up: at 1,000,000
(1 GB, 1 partition) it read 421 MB/s from Weir, 212 from Tansu, 255 from Kafka.

Measured quiet again for issue 33 (2026-11-28, 1,000,000 records, 1 partition, read_uncommitted,
two rounds, Kafka 4.4.0): librdkafka at its defaults read 988 then 327 MB/s from Weir (no back-off,
then two), 336 and 375 from Tansu (its answers never fill the queue), 465 and 508 from Kafka (about
one); with the back-off at 10 ms, 693 / 935, 385 / 370 and 891 / 960. The default figure is the
back-off's lottery: a broker that answers faster than the application drains 64 MiB a second pays
it, one that answers slower does not. Weir answers as Kafka does and as fast as it can; slowing its
answers to dodge one client's pause would slow every other client (issue 33's note).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from bench.throughput import compare, cpu_seconds, create_topic, produce
from bench.transactions import txn_throughput

PER_TXN = 10_000


def consume(client: str, bootstrap: str, topic: str, partitions: int, records: int,
            isolation: str) -> tuple[float, float | None]:
    """(MB/s of values, the consumer's CPU seconds per second: bench/fetch_consumers.py)."""
    out = subprocess.run([sys.executable, "-m", "bench.fetch_consumers", client, bootstrap, topic,
                          str(partitions), str(records), isolation],
                         capture_output=True, text=True, timeout=400)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode or not lines:
        raise RuntimeError(f"{client} consumer failed: {out.stderr[-2000:]}")
    figures = json.loads(lines[-1])
    if figures["records"] < records:
        raise RuntimeError(f"{client} read {figures['records']} of {records} records")
    return figures["MB/s"], figures["client CPU"]


def run(broker, args) -> dict:
    figures = {}
    loads = []
    cpu = dict.fromkeys(args.client_names, 0.0)  # broker CPU seconds while each client read
    client_cpu: dict[str, list[float]] = {client: [] for client in args.client_names}
    read_gb = 0.0
    for partitions in args.partition_counts:
        for isolation in args.isolation_levels:
            topic = f"fetch-{partitions}p-{isolation}"
            create_topic(broker.bootstrap, topic, partitions)
            if isolation == "read_committed":
                txn_throughput(broker.bootstrap, topic, args.records, PER_TXN, args.size)
            else:
                produce(broker.bootstrap, topic, args.records, args.size)
            for client in args.client_names:
                name = f"{client} {partitions}p {isolation.replace('read_', '')} MB/s"
                began = cpu_seconds(broker.process.pid)
                figures[name], share = consume(client, broker.bootstrap, topic, partitions, args.records, isolation)
                if share is not None:
                    client_cpu[client].append(share)
                cpu[client] += cpu_seconds(broker.process.pid) - began
                loads.append(os.getloadavg()[0])
            read_gb += args.records * args.size / 1e9
    # What serving costs the broker: far steadier than MB/s on a shared machine
    figures.update({f"{client} broker CPU s per GB": seconds / read_gb for client, seconds in cpu.items()})
    # How busy the consumer itself was (1.0 = a core): a figure near a single-threaded client's
    # core is bounded by the client, whichever broker answers
    figures.update({f"{client} client CPU share": sum(shares) / len(shares)
                    for client, shares in client_cpu.items() if shares})
    figures["load (1 min)"] = sum(loads) / len(loads)
    return figures


def bench_results(argv=None) -> dict:
    """The run ``main`` prints, its figures returned (``summarise``): for bench/report.py."""
    from bench.peers import add_arguments
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default="librdkafka,librdkafka-fqb10,java,aiokafka,ours")
    parser.add_argument("--partitions", default="1,6")
    parser.add_argument("--isolation", default="read_uncommitted,read_committed")
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.client_names = args.clients.split(",")
    args.partition_counts = [int(p) for p in args.partitions.split(",")]
    args.isolation_levels = args.isolation.split(",")
    print(f"load average at start: {os.getloadavg()}", flush=True)
    summary = compare(run, args, f"{args.records} x {args.size} B read back, every value read")
    print(f"load average at end: {os.getloadavg()}")
    return summary


def main(argv=None) -> int:
    bench_results(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
