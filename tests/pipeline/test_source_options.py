"""The weir source's options next to Spark's built-in Kafka source on the same topic, against Weir and
Apache Kafka (``any_broker``): both formats must give the same answer. One module, one Spark session."""

import json
import time

import pytest
from confluent_kafka import Producer as CKProducer
from confluent_kafka.admin import AdminClient
from confluent_kafka import TopicPartition as CKTopicPartition

from tests.support.topics import KEEP_FOREVER, create_topic
from tests.pipeline.test_source import ck_read

# A Spark session and a Kafka JVM start within the first test; on a loaded 2-core machine that alone can
# take minutes, so these modules get a longer per-test deadline than the suite's default.
pytestmark = pytest.mark.timeout(900)

BASE_TS = 1_700_000_000_000


def produce(bootstrap, topic, count, partitions, first=0):
    producer = CKProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(first, first + count):
        producer.produce(topic, value=f"v{i}".encode(), key=f"k{i}".encode(), partition=i % partitions,
                         headers=[("n", str(i).encode())], timestamp=BASE_TS + i * 1000)
    producer.flush()


def read(spark, fmt, bootstrap, topic, **options):
    reader = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def rows(df):
    return sorted((r.partition, r.offset, r.key, r.value, int(r.timestamp.timestamp() * 1000)) for r in df.collect())


def both(spark, bootstrap, topic, **options):
    """The rows each format reads with ``options``, asserted equal; returns them."""
    weir, kafka = (rows(read(spark, fmt, bootstrap, topic, **options)) for fmt in ("weir", "kafka"))
    assert weir == kafka, options
    return weir


@pytest.fixture
def topic(any_broker, topic_name):
    """Two partitions, 40 records one second apart (partition = i % 2)."""
    create_topic(any_broker.bootstrap, topic_name, 2, KEEP_FOREVER)
    produce(any_broker.bootstrap, topic_name, 40, 2)
    return topic_name


def test_batch_and_stream_equal_confluent_kafka(spark, any_broker, topic, tmp_path):
    bootstrap = any_broker.bootstrap
    expected = ck_read(bootstrap, topic, expected=40)
    batch = read(spark, "weir", bootstrap, topic, includeHeaders="true").collect()
    as_seen = sorted((r.partition, r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers],
                      int(r.timestamp.timestamp() * 1000)) for r in batch)
    assert as_seen == expected
    table = f"stream_{topic.replace('-', '_')}"
    stream = (spark.readStream.format("weir").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest").option("includeHeaders", "true").load())
    query = stream.writeStream.format("memory").queryName(table).start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    streamed = sorted((r.partition, r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers],
                       int(r.timestamp.timestamp() * 1000)) for r in spark.sql(f"SELECT * FROM {table}").collect())
    assert streamed == expected


def test_ending_timestamps_strategy_group_ids_and_max_records(spark, any_broker, topic):
    bootstrap = any_broker.bootstrap
    # endingTimestamp: each partition stops before its first record at or after the time.
    ended = both(spark, bootstrap, topic, endingTimestamp=str(BASE_TS + 20_000))
    assert [r[3] for r in sorted(ended, key=lambda r: r[4])] == [f"v{i}".encode() for i in range(20)]
    # endingOffsetsByTimestamp: a time past every record ends the partition at latest.
    by_partition = both(spark, bootstrap, topic, endingOffsetsByTimestamp=json.dumps(
        {topic: {"0": BASE_TS + 9_000, "1": BASE_TS + 10**9}}))
    assert sorted(r[3] for r in by_partition) == sorted(
        [f"v{i}".encode() for i in range(0, 9, 2)] + [f"v{i}".encode() for i in range(1, 40, 2)])
    # startingOffsetsByTimestampStrategy=latest: no record after the time means start at latest.
    late = both(spark, bootstrap, topic, startingOffsetsByTimestampStrategy="latest",
                startingOffsetsByTimestamp=json.dumps({topic: {"0": BASE_TS + 30_000, "1": BASE_TS + 10**9}}))
    assert sorted(r[3] for r in late) == sorted(f"v{i}".encode() for i in range(30, 40, 2))
    # groupIdPrefix and kafka.group.id are accepted by both.
    assert len(both(spark, bootstrap, topic, groupIdPrefix="mine", **{"kafka.group.id": f"{topic}-g"})) == 40
    # maxRecordsPerPartition: 20 offsets per topic-partition in pieces of at most 6 -> 4 each, as Spark's
    # documentation describes. Spark 4.2's own batch source (the V1 KafkaRelation that batch reads use)
    # left the 2 topic-partitions unsplit here, so only the rows are compared with it.
    assert read(spark, "weir", bootstrap, topic, maxRecordsPerPartition="6").rdd.getNumPartitions() == 8
    assert len(both(spark, bootstrap, topic, maxRecordsPerPartition="6")) == 40


def delete_records(bootstrap, topic, partition, before):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([CKTopicPartition(topic, partition, before)])
    for future in futures.values():
        future.result(30)


def test_fail_on_data_loss_after_delete_records(spark, any_broker, topic):
    bootstrap = any_broker.bootstrap
    delete_records(bootstrap, topic, 0, 6)  # partition 0 now starts at offset 6
    asks_for_deleted = json.dumps({topic: {"0": 2, "1": -2}})
    for fmt in ("weir", "kafka"):
        with pytest.raises(Exception):  # noqa: B017 (each format surfaces it as Spark wraps it)
            read(spark, fmt, bootstrap, topic, startingOffsets=asks_for_deleted).collect()
    skipped = both(spark, bootstrap, topic, startingOffsets=asks_for_deleted, failOnDataLoss="false")
    assert [r[1] for r in skipped if r[0] == 0] == list(range(6, 20))
    assert len([r for r in skipped if r[0] == 1]) == 20


def test_a_read_with_nothing_to_read_is_empty(spark, any_broker, topic_name):
    """An empty plan: Spark still runs one task, handing it InputPartition(None)."""
    create_topic(any_broker.bootstrap, topic_name, 2)
    assert both(spark, any_broker.bootstrap, topic_name) == []


def batch_sizes(spark, fmt, bootstrap, topic, produce_more, **options):
    """Rows per micro-batch while ``produce_more`` steps add records between processAllAvailable calls."""
    reader = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest"))
    for name, value in options.items():
        reader = reader.option(name, value)
    table = f"{fmt}_{topic.replace('-', '_')}"
    query = reader.load().writeStream.format("memory").queryName(table).start()
    try:
        query.processAllAvailable()
        for step in produce_more:
            step()
            query.processAllAvailable()
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]
    finally:
        query.stop()


def test_min_offsets_per_trigger_holds_batches_back(spark, weir_process, topic_name):
    """Checked on Weir only (each format needs a fresh topic and the steps take a while); the answer is
    compared with Spark's own source on the same broker."""
    bootstrap = weir_process.bootstrap
    sizes = {}
    for fmt in ("weir", "kafka"):
        topic = f"{topic_name}-{fmt}"
        create_topic(bootstrap, topic, 2)
        produce(bootstrap, topic, 10, 2)
        # 20 more are held back (fewer than 50, and maxTriggerDelay is an hour); 40 more make 60.
        steps = [lambda t=topic: produce(bootstrap, t, 20, 2, first=10),
                 lambda t=topic: produce(bootstrap, t, 40, 2, first=30)]
        sizes[fmt] = batch_sizes(spark, fmt, bootstrap, topic, steps, minOffsetsPerTrigger="50",
                                 maxTriggerDelay="1h")
    assert sizes["weir"] == sizes["kafka"] == [10, 60]


def test_max_trigger_delay_lets_a_small_batch_through(spark, weir_process, topic_name):
    bootstrap = weir_process.bootstrap
    create_topic(bootstrap, topic_name, 1)
    produce(bootstrap, topic_name, 3, 1)
    stream = (spark.readStream.format("weir").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic_name).option("startingOffsets", "earliest")
              .option("minOffsetsPerTrigger", "1000").option("maxTriggerDelay", "2s").load())
    query = stream.writeStream.format("memory").queryName(topic_name.replace("-", "_")) \
        .trigger(processingTime="200 milliseconds").start()
    try:
        query.processAllAvailable()  # the first trigger goes ahead with 3
        produce(bootstrap, topic_name, 4, 1, first=3)
        deadline = time.monotonic() + 60
        while sum(p["numInputRows"] for p in query.recentProgress) < 7 and time.monotonic() < deadline:
            query.awaitTermination(0.5)
        assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [3, 4]
    finally:
        query.stop()
