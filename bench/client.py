"""Our asyncio client next to aiokafka and confluent-kafka (its Python API and its asyncio API), on one
Weir broker, at each of ``--sizes`` (100 B, 1 KiB, 10 KiB values).

Clients: ``ours`` (``send``, a future a record; ``getmany``, a ConsumerRecord a record),
``ours-fast`` (``produce``, outcomes per batch through ``flush``; ``getmany_arrow``, one Arrow
record batch a partition: issue 32), ``confluent`` (confluent-kafka's Python API, librdkafka:
``produce`` with ``poll(0)`` every 1,000 and ``flush``; ``consume(10000)`` with
``fetch.queue.backoff.ms`` 10, see bench/fetch.py), ``aiokafka``, ``confluent-aio``
(confluent-kafka's asyncio API). Each consumer reads every record's value (its length; for
Arrow, the value column's lengths). Figures, each client in the same event loop (uvloop):

- produce: ``--records`` values of ``--size`` bytes, acks=all and idempotent,
  every ``send`` awaited in turn and every delivery awaited at the end; records/s and
  MB/s from the first send until the last acknowledgement, and the client process's CPU seconds
  per GB (all its threads: librdkafka's too);
- txn produce: the same records in transactions of ``--per-txn`` records (begin, sends,
  commit), measured the same way;
- consume: the produce topic read back from offset 0 with isolation.level=read_committed,
  MB/s until the last record's value is in the application's hands, and CPU seconds per GB;
- pipeline: the exactly-once pipeline (bench/client_pipeline.py): the txn produce topic
  consumed in a group, read_committed, each record transformed into an output topic by a
  transactional producer that commits the input offsets in its transactions of
  ``--per-txn`` records; records/s.

- import: ``import weir.client`` next to the module of each other client in ``--clients``
  (``aiokafka``, ``confluent_kafka``, ``confluent_kafka.aio``), each in a fresh interpreter with
  its bytecode compiled (as an installed package has it), alternating, median of ``--import-runs``;
  wall and CPU milliseconds, and weir.client's ratio to each (issue 32: at most 1.5x aiokafka's).

    python -m bench.client [--records 50000] [--max-mb 100] [--sizes 100,1024,10240] [--partitions 3] [--rounds 3]
                           [--figures import,clients] [--clients ours,ours-fast,confluent,...]

confluent-kafka's two contenders are in bench/client_confluent.py. For bench/report.py,
``bench_results`` returns the figures in ``bench.throughput.summarise``'s shape, one "peer" a
client, each figure named "<size> <figure>" ("1 KiB produce MB/s", "100 B consume CPU s/GB"), and
"import wall ms" / "import CPU ms" of the module the client's application imports (ours-fast's
is weir.client, confluent-aio's confluent_kafka.aio); bench/charts.py draws client.svg from them.

Rounds interleave the clients (a, b, c, a, b, c, ...), each round on fresh topics, so a
drift of the shared machine touches every client alike; medians are printed with the
ratios of ours to each other client.

Measured 2026-11-28 (issue 32; 3 partitions, 100 MB or 300,000 records a figure, 3 interleaved
rounds; the machine busy with other engineers' tests, load 6-15, so MB/s carries the broker's and
the machine's pace and CPU s/GB is the steadier figure; before the consumer's records left the
cyclic garbage collector). Ours-fast against confluent-kafka's Python API, produce MB/s and CPU
s/GB: 100 B 0.65x and 0.43x as frugal, 1 KiB 1.29x and 1.09x, 10 KiB 2.40x and 1.83x; consume
(Arrow) 36x / 6.8x, 3.4x / 2.2x, 9.9x / 4.5x. Ours per record (send, getmany): produce 0.11x,
0.26x, 1.39x; consume 3.5x, 0.70x, 3.8x. aiokafka is 1.8-10x behind both of ours. The consume ratios to
confluent-kafka were measured while its reads still waited a second for records that never came
(bench/client_confluent.py): they overstate ours. The import
figure: weir.client 1.05-1.14x aiokafka's time.

Issue 32's bar, quiet machine (2026-11-28, nothing else running, load 0.4-0.5; 300,000 x 1 KiB, 3
partitions, 5 interleaved rounds, medians; confluent-kafka's consume without the lost second),
ours against confluent-kafka's Python API: produce (``produce``, idempotent, acks=all) 271.8 against
250.1 MB/s, 1.09x (1.55x as frugal in CPU; ``send`` with a future a record 0.44x); consume per
record (``getmany``) 1,195 against 858 MB/s, 1.39x; consume as Arrow (``getmany_arrow``) 1,205 MB/s,
1.40x, short of the 3x asked. Why: our consumer spends 0.8 CPU s/GB either way, so the Arrow path is
no longer paying for Python objects (per-record consume is as fast) but for bytes: profiled on 300
MB, receiving the answers (``recv_into``, the kernel's copy) takes 0.076 s, copying the values into
the Arrow column 0.071 s, CRC-32C 0.024 s, the rest the event loop. 3x confluent-kafka is 2.6 GB/s,
0.39 CPU s/GB for everything, of which the socket copy alone takes 0.25: only values referenced in
place (Arrow's binary_view, a different column type than the issue's ``binary``) without the CRC
check could come near. import: weir.client 115.8 ms, aiokafka 97.3 ms, 1.19x (11 alternating
interpreters, load 0.3).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import time

from bench.client_confluent import (confluent_consume, confluent_produce, confluent_sync_consume,
                                    confluent_sync_produce)
from bench.client_pipeline import PIPELINES
from bench.import_cost import import_figures
from bench.peers import weir_starter
from bench.throughput import create_topic, summarise

_topics = itertools.count()


def _topic(kind: str) -> str:
    return f"bench-{kind}-{os.getpid()}-{next(_topics)}"


async def warm_up(producer, topic, transactional):
    """One record first (connections, metadata, the coordinator), inside a transaction if need be."""
    if transactional:
        async with producer.transaction():
            await (await producer.send(topic, b"warm-up", partition=0))
    else:
        await producer.send_and_wait(topic, b"warm-up", partition=0)


# ---------------------------------------------------------------------- ours

async def timed_sends(producer, topic, records, payload, per_txn):
    """Seconds to send ``records`` through ``producer`` (ours or aiokafka's: the same calls),
    ``per_txn`` to a transaction when given, and have every one acknowledged."""
    began = time.perf_counter()
    if per_txn:
        for start in range(0, records, per_txn):
            async with producer.transaction():
                for _ in range(min(per_txn, records - start)):
                    await producer.send(topic, payload)
    else:
        deliveries = [await producer.send(topic, payload) for _ in range(records)]
        await asyncio.gather(*deliveries)
    return time.perf_counter() - began


async def ours_produce(bootstrap, topic, records, payload, per_txn=None):
    from weir.client import Producer
    options = {"transactional_id": f"bench-ours-{topic}"} if per_txn else {}
    async with Producer(bootstrap, acks="all", enable_idempotence=True, linger_ms=5, **options) as producer:
        await warm_up(producer, topic, per_txn)
        return await timed_sends(producer, topic, records, payload, per_txn)


async def ours_consume(bootstrap, topic, partitions, records):
    from weir.client import Consumer, TopicPartition
    async with Consumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                        auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        return await read_values(consumer, records)


async def read_values(consumer, records):
    """Seconds until ``records`` values are read through getmany (ours and aiokafka's alike)."""
    received = value_bytes = 0
    began = time.perf_counter()
    while received < records:
        for batch in (await consumer.getmany(timeout_ms=1000, max_records=10000)).values():
            received += len(batch)
            for record in batch:
                value_bytes += len(record.value)
    return time.perf_counter() - began


async def ours_fast_produce(bootstrap, topic, records, payload, per_txn=None):
    from weir.client import Producer
    options = {"transactional_id": f"bench-fast-{topic}"} if per_txn else {}
    async with Producer(bootstrap, acks="all", enable_idempotence=True, linger_ms=5, **options) as producer:
        await warm_up(producer, topic, per_txn)
        began = time.perf_counter()
        if per_txn:
            for start in range(0, records, per_txn):
                async with producer.transaction():
                    for _ in range(min(per_txn, records - start)):
                        await producer.produce(topic, payload)
                await producer.flush()
        else:
            for _ in range(records):
                await producer.produce(topic, payload)
            await producer.flush()
        return time.perf_counter() - began


async def ours_fast_consume(bootstrap, topic, partitions, records):
    import pyarrow.compute as pc

    from weir.client import Consumer, TopicPartition
    async with Consumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                        auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        received = value_bytes = 0
        began = time.perf_counter()
        while received < records:
            for batch in (await consumer.getmany_arrow(timeout_ms=1000, max_records=10000)).values():
                received += batch.num_rows
                value_bytes += pc.sum(pc.binary_length(batch.column("value"))).as_py() or 0
        return time.perf_counter() - began


# ---------------------------------------------------------------------- aiokafka

async def aiokafka_produce(bootstrap, topic, records, payload, per_txn=None):
    from aiokafka import AIOKafkaProducer
    options = {"transactional_id": f"bench-aiokafka-{topic}"} if per_txn else {}
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
                                **options)
    await producer.start()
    try:
        await warm_up(producer, topic, per_txn)
        return await timed_sends(producer, topic, records, payload, per_txn)
    finally:
        await producer.stop()


async def aiokafka_consume(bootstrap, topic, partitions, records):
    from aiokafka import AIOKafkaConsumer, TopicPartition
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        return await read_values(consumer, records)
    finally:
        await consumer.stop()


CLIENTS = {
    "ours": (ours_produce, ours_consume),
    "ours-fast": (ours_fast_produce, ours_fast_consume),
    "confluent": (confluent_sync_produce, confluent_sync_consume),
    "aiokafka": (aiokafka_produce, aiokafka_consume),
    "confluent-aio": (confluent_produce, confluent_consume),
}


def one_round(bootstrap: str, name: str, size: int, args) -> dict[str, float]:
    produce, consume = CLIENTS[name]
    payload = os.urandom(size)
    records = records_for(size, args)
    gigabytes = records * size / 1e9
    run = _loop_runner()
    figures = {}
    topic = _topic(name)
    create_topic(bootstrap, topic, args.partitions)
    seconds, cpu = _timed(run, produce(bootstrap, topic, records, payload))
    figures["produce records/s"] = records / seconds
    figures["produce MB/s"] = gigabytes * 1e3 / seconds
    figures["produce CPU s/GB"] = cpu / gigabytes
    seconds, cpu = _timed(run, consume(bootstrap, topic, args.partitions, records + 1))  # + the warm-up record
    figures["consume MB/s"] = gigabytes * 1e3 / seconds
    figures["consume CPU s/GB"] = cpu / gigabytes
    if "txn" in args.figures:
        txn_topic = _topic(name + "-txn")
        create_topic(bootstrap, txn_topic, args.partitions)
        seconds = run(produce(bootstrap, txn_topic, records, payload, per_txn=args.per_txn))
        figures["txn produce MB/s"] = gigabytes * 1e3 / seconds
        if name in PIPELINES:
            output = _topic(name + "-eos")
            create_topic(bootstrap, output, args.partitions)
            seconds = run(PIPELINES[name](bootstrap, txn_topic, output, records + 1, args.per_txn))  # + the warm-up
            figures["pipeline records/s"] = (records + 1) / seconds
    return figures


def records_for(size: int, args) -> int:
    """``--records``, or fewer for large values: at most ``--max-mb`` megabytes a figure."""
    return max(1, min(args.records, int(args.max_mb * 1e6 / size)))


def _timed(run, coroutine) -> tuple[float, float]:
    """(the seconds the coroutine reports, the CPU seconds of this process meanwhile: all its threads)."""
    cpu = time.process_time()
    seconds = run(coroutine)
    return seconds, time.process_time() - cpu


def _loop_runner():
    try:
        import uvloop
        return uvloop.run
    except ImportError:
        return asyncio.run


#: the module each client's application imports: the import figure
IMPORTS = {"ours": "weir.client", "ours-fast": "weir.client", "confluent": "confluent_kafka",
           "aiokafka": "aiokafka", "confluent-aio": "confluent_kafka.aio"}


def size_label(size: int) -> str:
    """The figures' prefix: 100 -> "100 B", 1024 -> "1 KiB", 10240 -> "10 KiB"."""
    return f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50000)
    parser.add_argument("--sizes", default="100,1024,10240", help="value sizes in bytes, comma-separated")
    parser.add_argument("--max-mb", type=float, default=100, help="at most this many MB of values a figure")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--per-txn", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--bootstrap", help="an already running broker instead of a fresh Weir")
    parser.add_argument("--figures", default="import,clients,txn",
                        help="import (import time), clients (produce and consume), txn (transactions, pipeline)")
    parser.add_argument("--import-runs", type=int, default=11)
    return parser.parse_args(argv)


def measure(args) -> dict[str, list[dict[str, float]]]:
    """Every client's figures per round: "<size> <figure>" (``size_label``) and the import figures
    (in the first round: they are medians of ``--import-runs`` already); the medians per size printed."""
    names = args.clients.split(",")
    merged: dict[str, list[dict[str, float]]] = {name: [{} for _ in range(args.rounds)] for name in names}
    if "import" in args.figures:
        # aiokafka's always: issue 32's import bar is weir.client within 1.5x of it
        imports = import_figures(args.import_runs, tuple(dict.fromkeys([*(IMPORTS[name] for name in names),
                                                                        "aiokafka"])))
        for name in names:
            merged[name][0].update(imports[IMPORTS[name]])
    if "clients" not in args.figures:
        return merged
    if "ours-fast" in names:
        import pyarrow.compute  # noqa: F401 (imported once, outside every timed round)
    broker = None if args.bootstrap else weir_starter()()
    bootstrap = args.bootstrap or broker.bootstrap
    try:
        for size in (int(x) for x in args.sizes.split(",")):
            rounds: dict[str, list[dict]] = {name: [] for name in names}
            loads = []
            for i in range(args.rounds):
                for name in names:
                    loads.append(os.getloadavg()[0])
                    figures = one_round(bootstrap, name, size, args)
                    rounds[name].append(figures)
                    merged[name][i].update({f"{size_label(size)} {metric}": v for metric, v in figures.items()})
                    print(f"round {i + 1} {size} B {name:<14}" + "  ".join(f"{k} {v:,.1f}" for k, v in figures.items()),
                          file=sys.stderr, flush=True)
            print_medians(rounds, names, args, size, loads)
    finally:
        if broker is not None:
            broker.stop()
    return merged


def bench_results(argv=None) -> dict:
    """The run ``main`` prints, its figures returned (``summarise``, one "peer" a client): for bench/report.py."""
    args = parse_args(argv)
    args.figures = args.figures.split(",")
    title = (f"{args.records} records a figure (at most {args.max_mb:g} MB), values of "
             f"{', '.join(size_label(int(x)) for x in args.sizes.split(','))}, {args.partitions} partitions, "
             f"{args.rounds} interleaved round(s) on one Weir broker; produce acks=all idempotent, "
             "consume read_committed; CPU of the client's process")
    return summarise(measure(args), title)


def main(argv=None) -> int:
    bench_results(argv)
    return 0


def print_medians(rounds: dict[str, list[dict]], names: list[str], args, size: int, loads: list[float]) -> None:
    medians = {name: {metric: statistics.median(r[metric] for r in rs) for metric in rs[0]}
               for name, rs in rounds.items()}
    metrics = list(dict.fromkeys(m for figures in medians.values() for m in figures))
    others = [n for n in names if not n.startswith("ours")]
    ours = [n for n in names if n.startswith("ours")]
    print(f"\n{records_for(size, args)} records of {size} B, {args.partitions} partitions, median of {args.rounds} "
          f"interleaved rounds on one Weir broker (load {min(loads):.1f}-{max(loads):.1f})")
    print(f"{'metric':<20}" + "".join(f"{n:>15}" for n in names)
          + "".join(f"{o + '/' + n:>24}" for o in ours for n in others))
    for metric in metrics:
        row = f"{metric:<20}"
        for name in names:
            value = medians[name].get(metric)
            row += f"{value:>15,.1f}" if value is not None else f"{'skipped':>15}"
        for mine in ours:
            for name in others:
                a, b = medians[mine].get(metric), medians[name].get(metric)
                if "CPU" in metric and a and b:  # less is better: the ratio says how many times less
                    a, b = b, a
                row += f"{a / b:>23.2f}x" if a and b else f"{'-':>24}"
        print(row)


if __name__ == "__main__":
    raise SystemExit(main())
