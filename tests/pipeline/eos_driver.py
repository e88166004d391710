"""A Spark driver for the exactly-once sink test: copies one topic to another through the weir source and sink.

    python -m tests.pipeline.eos_driver BOOTSTRAP INPUT OUTPUT CHECKPOINT

Runs until every input record available at start is processed, then stops the
query and exits 0. The test kills it with -9 (the whole process group:
the JVM and its Python workers) while it holds after a decision
(``WEIR_SINK_HOLD_AFTER_DECISION``), and runs it again on the same checkpoint.
"""

import sys

from reference.spark import start_spark


def main(bootstrap: str, source: str, target: str, checkpoint: str) -> None:
    spark = start_spark("eos-driver")
    stream = (spark.readStream.format("weir").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "100").load())
    query = (stream.selectExpr("key", "value").writeStream.format("weir")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", target)
             .option("kafka.transaction.timeout.ms", "300000")
             .option("checkpointLocation", checkpoint).trigger(processingTime="0 seconds").start())
    query.processAllAvailable()
    query.stop()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
