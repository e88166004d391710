"""spark.readStream.format("weir"): micro-batches bounded by maxOffsetsPerTrigger, resumed from the checkpoint."""

import json

from confluent_kafka import Producer as CKProducer

from tests.compat.test_confluent_kafka import create_topic


def produce(bootstrap, topic, values):
    producer = CKProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value=value)
    producer.flush()


def run_once(spark, bootstrap, topic, checkpoint, output):
    """Process everything available into parquet files (Spark's exactly-once file sink), then stop."""
    stream = (spark.readStream.format("weir").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "25").load())
    query = (stream.selectExpr("CAST(value AS STRING) AS value", "partition", "offset").writeStream
             .format("parquet").option("path", output).option("checkpointLocation", checkpoint).start())
    try:
        query.processAllAvailable()
        return [p for p in query.recentProgress if p["numInputRows"] > 0]
    finally:
        query.stop()


def test_streaming_read_resumes_from_its_checkpoint(spark, shared_broker, topic_name, tmp_path):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    produce(bootstrap, topic_name, [f"first {i}".encode() for i in range(60)])
    checkpoint, output = str(tmp_path / "checkpoint"), str(tmp_path / "out")

    batches = run_once(spark, bootstrap, topic_name, checkpoint, output)
    assert sum(b["numInputRows"] for b in batches) == 60
    assert len(batches) >= 3 and all(b["numInputRows"] <= 25 for b in batches)  # maxOffsetsPerTrigger
    assert sum(json.loads(batches[-1]["sources"][0]["endOffset"])[topic_name].values()) == 60  # Kafka's JSON

    produce(bootstrap, topic_name, [f"second {i}".encode() for i in range(40)])
    resumed = run_once(spark, bootstrap, topic_name, checkpoint, output)
    assert sum(b["numInputRows"] for b in resumed) == 40  # only what came after the committed batches

    values = sorted(r.value for r in spark.read.parquet(output).collect())
    assert values == sorted([f"first {i}" for i in range(60)] + [f"second {i}" for i in range(40)])
