"""A Spark batch job over one topic: per key, how many records, how many value bytes, the offsets
and timestamps they span, and with ``--sum-field`` the sum of a numeric field of JSON values; printed,
and written as JSON records to ``--output-topic`` if given.

Per-product inventory totals from the orders job's updates (exact: one update per order):

    python -m weir.pipeline.jobs.topic_batch --bootstrap-servers HOST:9092 --topic inventory-updates \
        --sum-field delta --output-topic inventory-totals --master 'local[2]'

    python -m weir.pipeline.jobs.topic_batch --bootstrap-servers HOST:9092 --topic orders --master 'local[2]'
    spark-submit pipeline/jobs/topic_batch.py --bootstrap-servers HOST:9092 --topic orders --output-topic counts

Reads under read_committed between ``--starting-offsets`` and ``--ending-offsets``
(earliest/latest or Spark's per-partition JSON), so aborted transactions never count.
"""

from __future__ import annotations

import argparse
import sys

from weir.pipeline.jobs.common import add_common_arguments, create_topics, kafka_options, spark_session


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="weir.pipeline.jobs.topic_batch", description=__doc__.split("\n\n")[0])
    add_common_arguments(parser)
    parser.add_argument("--topic", required=True, help="the topic to summarise")
    parser.add_argument("--starting-offsets", default="earliest")
    parser.add_argument("--ending-offsets", default="latest")
    parser.add_argument("--output-topic", help="write one JSON summary record per key here (key: the key)")
    parser.add_argument("--source-format", choices=("weir", "kafka"), default="weir")
    parser.add_argument("--sink-format", choices=("weir", "kafka"), default="weir")
    parser.add_argument("--sum-field", help="sum this numeric field of JSON values per key (as 'total')")
    parser.add_argument("--show", type=int, default=20, help="keys to print, most records first")
    return parser.parse_args(argv)


def summarise(spark, args):
    """One row per key (null keys together): key, records, value_bytes, partitions, offsets, timestamps."""
    from pyspark.sql import functions as F

    records = (spark.read.format(args.source_format).options(**kafka_options(args))
               .option("subscribe", args.topic).option("startingOffsets", args.starting_offsets)
               .option("endingOffsets", args.ending_offsets).load())
    sums = []
    if args.sum_field:
        field = F.get_json_object(F.col("value").cast("string"), f"$.{args.sum_field}").cast("long")
        sums = [F.sum(field).alias("total")]
    return (records.groupBy(F.col("key").cast("string").alias("key"))
            .agg(F.count(F.lit(1)).alias("records"), *sums,
                 F.sum(F.coalesce(F.length("value"), F.lit(0))).alias("value_bytes"),
                 F.sort_array(F.collect_set("partition")).alias("partitions"),
                 F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"),
                 F.min("timestamp").alias("first_timestamp"), F.max("timestamp").alias("last_timestamp")))


def write_summary(summary, args) -> None:
    from pyspark.sql import functions as F

    rows = summary.select(F.col("key"), F.to_json(F.struct(*summary.columns)).alias("value"))
    (rows.write.format(args.sink_format).options(**kafka_options(args)).option("topic", args.output_topic)
     .mode("append").save())


def main(argv=None) -> int:
    args = parse_args(argv)
    spark = spark_session("weir-topic-batch", args)
    summary = summarise(spark, args).orderBy("records", ascending=False).cache()
    summary.show(args.show, truncate=False)
    if args.output_topic:
        create_topics(args.bootstrap_servers, {args.output_topic: {}}, args.partitions)
        write_summary(summary, args)
        print(f"wrote {summary.count()} key summaries to {args.output_topic}", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
