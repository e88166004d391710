"""The orders pipeline as a Spark Structured Streaming job, exactly once.

Orders in (JSON ``{"order_id", "customer", "item", "quantity"}``, the shape of
``examples/exactly_once_orders.py``); out, per order, in the same micro-batch
transactions of the weir sink:

- one confirmation on ``--confirmations`` (key: the customer, so a customer's
  confirmations stay in order): ``{"order_id", "customer", "item", "quantity", "status"}``;
- one inventory update on ``--inventory`` (key: the product):
  ``{"order_id", "item", "delta"}`` with delta = -quantity.

    python -m weir.pipeline.jobs.orders --bootstrap-servers HOST:9092 --checkpoint /ckpt --master 'local[2]'
    spark-submit pipeline/jobs/orders.py --bootstrap-servers HOST:9092 --checkpoint /ckpt

How the per-product totals stay exact: they are computed from the update
stream, not kept as Spark state. The job is stateless; its only state is the
input offsets in Spark's checkpoint, and the sink commits each batch's
output exactly once (a batch Spark runs again after a crash reads the same
offsets and the sink writes nothing for a batch it already decided). So the
update topic holds exactly one update per order, and a product's total is the
sum of its deltas: ``pipeline/jobs/topic_batch.py --sum-field delta`` computes
every product's total from it (read_committed), any consumer may fold it
incrementally, and confirmations and updates of a batch commit together.

Why not a running total in Spark's state store (``groupBy(item).sum`` emitted
in update mode to a compacted topic): Spark 4.2 refuses update output mode
for Python data sources ("weir does not support Update mode": its write
builder for Python sinks lacks SupportsStreamingUpdateAsAppend), and complete
mode would rewrite every product's total in every micro-batch. Inputs whose
value is not an order (unparsable JSON, no order_id) are skipped.

``--sink-format kafka`` writes with Spark's own Kafka sink instead (at least
once: a batch run again after a crash writes its output again); it needs
Spark's connector jars (``--jars`` or ``spark-submit --packages``).

Timing: ``--transaction-timeout-ms`` must exceed the trigger interval plus
``--restart-allowance-ms`` (the time a crashed driver gets to come back and
commit a decided batch); the job refuses to start otherwise (see
``pipeline/exactly_once.py``).
"""

from __future__ import annotations

import argparse
import sys

from weir.pipeline.exactly_once import (
    RESTART_ALLOWANCE_OPTION, TRIGGER_INTERVAL_OPTION, check_transaction_timing)
from weir.pipeline.jobs.common import (
    add_common_arguments, create_topics, duration_ms, kafka_options, spark_session)

ORDER_SCHEMA = "order_id LONG, customer STRING, item STRING, quantity INT"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="weir.pipeline.jobs.orders", description=__doc__.split("\n\n")[0])
    add_common_arguments(parser)
    parser.add_argument("--checkpoint", required=True, help="Spark checkpoint location (offsets, state)")
    parser.add_argument("--orders", default="orders", help="input topic")
    parser.add_argument("--confirmations", default="order-confirmations", help="output topic, one per order")
    parser.add_argument("--inventory", default="inventory-updates", help="output topic, one update per order")
    parser.add_argument("--trigger-interval", default="5s", help="micro-batch interval, e.g. 0s, 500ms, 5s")
    parser.add_argument("--max-offsets-per-trigger", type=int, help="cap on orders per micro-batch")
    parser.add_argument("--source-format", choices=("weir", "kafka"), default="weir")
    parser.add_argument("--sink-format", choices=("weir", "kafka"), default="weir")
    parser.add_argument("--transaction-timeout-ms", type=int, default=600000,
                        help="kafka.transaction.timeout.ms of the weir sink (the broker allows up to its "
                             "transaction.max.timeout.ms, 900000 by default)")
    parser.add_argument("--restart-allowance-ms", type=int, default=120000,
                        help="time a crashed driver has to restart and commit a decided batch")
    parser.add_argument("--until-idle", action="store_true",
                        help="stop once every order available is processed (else run until stopped)")
    args = parser.parse_args(argv)
    args.trigger_ms = duration_ms(args.trigger_interval)
    if args.sink_format == "weir":  # fail before starting a JVM
        check_transaction_timing(args.transaction_timeout_ms, args.restart_allowance_ms, args.trigger_ms)
    return args


def build_output(spark, args):
    """The query's rows in the sink's columns (topic, key, value): per order a confirmation and an update."""
    from pyspark.sql import functions as F

    reader = (spark.readStream.format(args.source_format).options(**kafka_options(args))
              .option("subscribe", args.orders).option("startingOffsets", "earliest"))
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    orders = (reader.load()
              .select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("order"))
              .select("order.*").where(F.col("order_id").isNotNull()))
    confirmations = orders.select(
        F.lit(args.confirmations).alias("topic"), F.col("customer").alias("key"),
        F.to_json(F.struct("order_id", "customer", "item", "quantity",
                           F.lit("confirmed").alias("status"))).alias("value"))
    updates = orders.select(
        F.lit(args.inventory).alias("topic"), F.col("item").alias("key"),
        F.to_json(F.struct("order_id", "item", (-F.col("quantity")).alias("delta"))).alias("value"))
    return confirmations.unionByName(updates)


def start_query(spark, args):
    writer = (build_output(spark, args).writeStream.queryName("orders").outputMode("append")
              .format(args.sink_format).options(**kafka_options(args))
              .option("checkpointLocation", args.checkpoint)
              .trigger(processingTime=f"{args.trigger_ms} milliseconds"))
    if args.sink_format == "weir":
        writer = (writer.option("kafka.transaction.timeout.ms", str(args.transaction_timeout_ms))
                  .option(RESTART_ALLOWANCE_OPTION, str(args.restart_allowance_ms))
                  .option(TRIGGER_INTERVAL_OPTION, str(args.trigger_ms)))
    return writer.start()


def main(argv=None) -> int:
    args = parse_args(argv)
    create_topics(args.bootstrap_servers, {args.orders: {}, args.confirmations: {}, args.inventory: {}},
                  args.partitions)
    spark = spark_session("weir-orders", args)
    query = start_query(spark, args)
    print(f"orders query {query.id} started", flush=True)
    if args.until_idle:
        query.processAllAvailable()
        query.stop()
    else:
        query.awaitTermination()
    spark.stop()
    print("orders query stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
