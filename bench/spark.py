"""The ``weir`` Spark data source next to Spark's own Kafka connector, on one Weir broker and one Spark session.

- source: a batch read of the whole ``--records`` topic (100-byte values, keys, ``--partitions``
  partitions) written to Spark's ``noop`` sink, so every column is built; ``format("weir")``
  against ``format("kafka")`` (the JVM source, kafka-clients), same session, same options.
- sink: a streaming query (Spark's Kafka source, ``Trigger.AvailableNow``) copying the same topic
  to a new one; the weir exactly-once sink against the built-in at-least-once Kafka sink.

Records/s from the action's start to its end. Rounds interleave the two contenders and medians are
printed, so the machine's other load hits both alike. For bench/report.py, ``bench_results`` returns
them in ``bench.throughput.summarise``'s shape: the peers ``weir`` (``format("weir")``) and
``spark-kafka`` (Spark's connector), the figures "source rows/s" and "sink rows/s" (spark.svg).

    python -m bench.spark [--records 1000000] [--partitions 2] [--rounds 3] [--only source|sink]

Measured on the shared 2-core machine (load 1-8 from other work; 300,000 records, sinks and
source warmed up, rounds interleaved; single rounds still swing +-30%, so read the medians):
- before (main at d02c92c, C record decoder already in): source 93,542 vs JVM 100,443 (0.93x);
  exactly-once sink 53,405 vs at-least-once 77,878 (0.69x).
- after (h-pipeperf): source 101,823 vs 151,486 (0.67x; another run 70,752 vs 59,956, 1.18x: the
  source ratio is within noise of before); sink 58,299 vs 75,775 (0.77x; an unwarmed run 0.87x).
1,000,000 records, 3 interleaved rounds, medians (h-pipesink):
- before (6f7e281; load average 10 during the run): source 110,262 vs JVM 192,522 (0.57x); exactly-once
  sink 59,623 vs at-least-once 91,307 (0.65x).
- after (load 4.3-4.8): source 145,069 vs 273,868 (0.53x, source code unchanged); exactly-once sink
  173,818 vs 145,266 (1.20x).
Issue 32, the source before and after it (``Consumer.getmany_arrow``, C-built records, answers read
into their frame), quiet machine (2026-11-28, nothing else running, load 0-2.7 from the bench itself;
1,000,000 records, 3 interleaved rounds, medians, ``--only source``): before (eea6bd0) 338,377
records/s against the JVM source's 425,492 (0.80x); after (7033887) 805,394 against 395,122 (2.04x):
2.4x the rows/s of before.
What changed in the sink task then: each partition keeps up to five Produce requests in flight
(the sink's own produce lanes then; since, the client's Producer, whose sender does the same), and a Spark Arrow
batch with key/value columns is grouped
by partition and encoded in C straight from the Arrow buffers (client/_murmur2.c partition_rows,
protocol/_record_encode.c append_arrow: one call per record batch, no Python object per row); rows
with headers or topic/partition columns keep the per-row path. The source task decodes with the C
decoder (protocol/_record_decode.c); its remaining Python cost is the consumer's fetch loop and
building the Arrow columns.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

from bench.peers import weir_starter
from bench.throughput import REPO, create_topic, summarise

VALUE = b"v" * 100


def load(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1000000,
                         "queue.buffering.max.messages": 1000000, "queue.buffering.max.kbytes": 1048576})
    chunk = 10_000
    for base in range(0, records, chunk):
        batch = [{"key": str(n).encode(), "value": VALUE, "partition": n % partitions}
                 for n in range(base, min(records, base + chunk))]
        sent = 0
        while sent < len(batch):
            sent += producer.produce_batch(topic, batch[sent:])
            producer.poll(0 if sent == len(batch) else 0.05)
    if producer.flush(600):
        raise RuntimeError("the topic was not loaded")


def read_once(spark, fmt: str, bootstrap: str, topic: str, records: int) -> float:
    df = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    began = time.monotonic()
    df.write.format("noop").mode("overwrite").save()
    elapsed = time.monotonic() - began
    return records / elapsed


def copy_once(spark, sink: str, bootstrap: str, source: str, target: str, records: int, workdir: Path) -> float:
    create_topic(bootstrap, target, 2)
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source).option("startingOffsets", "earliest").load())
    writer = (stream.selectExpr("key", "value").writeStream.format(sink)
              .option("kafka.bootstrap.servers", bootstrap).option("topic", target)
              .option("checkpointLocation", str(workdir / target)).trigger(availableNow=True))
    began = time.monotonic()
    query = writer.start()
    query.awaitTermination()
    elapsed = time.monotonic() - began
    if query.exception() is not None:
        raise RuntimeError(query.exception())
    written = sum(p["numInputRows"] for p in query.recentProgress)
    if written != records:
        raise RuntimeError(f"{sink} sink wrote {written} of {records}")
    return records / elapsed


#: the two contenders, each a "peer" of the summary: Weir's data source and Spark's own connector
WEIR, CONNECTOR = "weir", "spark-kafka"


def report(title: str, results: dict[str, list[float]], target: float) -> None:
    medians = {name: statistics.median(rates) for name, rates in results.items()}
    print(f"\n{title}")
    for name, rates in results.items():
        print(f"  {name:26} median {medians[name]:>10,.0f} records/s   rounds " +
              ", ".join(f"{r:,.0f}" for r in rates))
    ratio = medians[WEIR] / medians[CONNECTOR]
    print(f"  ratio {ratio:.2f}x (target {target}x): {'met' if ratio >= target else 'NOT met'}")


def measure(args) -> dict[str, list[dict[str, float]]]:
    """Per contender and round: "source rows/s" and "sink rows/s" (as ``--only`` chooses)."""
    sys.path.insert(0, str(REPO))
    from reference.spark import start_spark

    rounds: dict[str, list[dict[str, float]]] = {WEIR: [{} for _ in range(args.rounds)],
                                                 CONNECTOR: [{} for _ in range(args.rounds)]}
    broker = None if args.bootstrap else weir_starter()()
    bootstrap = args.bootstrap or broker.bootstrap
    workdir = Path(tempfile.mkdtemp(prefix="spark-bench-"))
    try:
        topic = f"bench-spark-{int(time.time())}"
        create_topic(bootstrap, topic, args.partitions)
        began = time.monotonic()
        load(bootstrap, topic, args.records, args.partitions)
        print(f"loaded {args.records:,} records in {time.monotonic() - began:.1f} s")
        spark = start_spark("bench-spark")
        if args.only != "sink":
            read_once(spark, "kafka", bootstrap, topic, args.records)  # warm-up: JIT, Python workers
            for n in range(args.rounds):
                rounds[WEIR][n]["source rows/s"] = read_once(spark, "weir", bootstrap, topic, args.records)
                rounds[CONNECTOR][n]["source rows/s"] = read_once(spark, "kafka", bootstrap, topic, args.records)
            report("batch read of the topic: weir source (Python) against kafka source (JVM)",
                   {name: [r["source rows/s"] for r in rs] for name, rs in rounds.items()}, 0.5)
        if args.only != "source":
            # warm-up, as for the source: the first streaming query of each sink pays Python worker and
            # JIT start-up (it measured 4-6x slower than the next rounds)
            copy_once(spark, "weir", bootstrap, topic, f"{topic}-eos-warm", args.records, workdir)
            copy_once(spark, "kafka", bootstrap, topic, f"{topic}-alo-warm", args.records, workdir)
            for n in range(args.rounds):
                rounds[WEIR][n]["sink rows/s"] = copy_once(
                    spark, "weir", bootstrap, topic, f"{topic}-eos-{n}", args.records, workdir)
                rounds[CONNECTOR][n]["sink rows/s"] = copy_once(
                    spark, "kafka", bootstrap, topic, f"{topic}-alo-{n}", args.records, workdir)
            report("streaming copy of the topic: weir exactly-once sink against kafka at-least-once sink",
                   {name: [r["sink rows/s"] for r in rs] for name, rs in rounds.items()}, 0.8)
        spark.stop()
    finally:
        if broker is not None:
            broker.process.kill()
            broker.process.wait()
    return rounds


def bench_results(argv=None) -> dict:
    """The run ``main`` prints, its figures returned (``summarise``, the two data sources as
    "peers"): for bench/report.py."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("source", "sink"))
    parser.add_argument("--bootstrap", help="an already running broker (default: start a Weir)")
    args = parser.parse_args(argv)
    return summarise(measure(args), f"{args.records} records of {len(VALUE)} B, {args.partitions} partitions, "
                                    f"{args.rounds} interleaved round(s), one Weir broker, a local Spark session; "
                                    "source: batch read to the noop sink; sink: streaming copy "
                                    "(weir exactly-once, spark-kafka at-least-once)")


def main(argv=None) -> int:
    bench_results(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
