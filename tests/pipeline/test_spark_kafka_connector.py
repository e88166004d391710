"""Spark's own Kafka connector (spark-sql-kafka-0-10 on the reference's kafka-clients) against Weir, and the same
scenarios against Apache Kafka (``any_broker``): batch reads between offsets, a read_committed stream
that never shows an aborted record while transactions are written, and the built-in sink."""

import json
import threading
import time

import base64

import pytest
from confluent_kafka import Producer as CKProducer

from tests.security import token_scenario
from tests.security.acl_wire import scram_login
from tests.security.brokers import ConfiguredBroker, listeners_setting
from tests.security.sasl_setup import add_scram_user, sasl_settings
from tests.support.topics import create_topic
from tests.pipeline.test_source import ck_read

# A Spark session and a Kafka JVM start within the first test; on a loaded 2-core machine that alone can
# take minutes, so these modules get a longer per-test deadline than the suite's default.
pytestmark = pytest.mark.timeout(900)


def kafka_read(spark, bootstrap, **options):
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def produce(bootstrap, topic, count, partitions):
    producer = CKProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), key=f"k{i}".encode(), partition=i % partitions,
                         headers=[("n", str(i).encode())])
    producer.flush()


def rows(df):
    return sorted((r.partition, r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers],
                   int(r.timestamp.timestamp() * 1000)) for r in df.collect())


def test_batch_read_between_offsets_equals_confluent_kafka(spark, any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 3)
    produce(bootstrap, topic_name, 90, 3)
    expected = ck_read(bootstrap, topic_name, expected=90)

    whole = kafka_read(spark, bootstrap, subscribe=topic_name, includeHeaders="true")
    assert rows(whole) == expected
    assert {r.timestampType for r in whole.select("timestampType").distinct().collect()} == {0}

    between = kafka_read(spark, bootstrap, subscribe=topic_name, includeHeaders="true",
                         startingOffsets=json.dumps({topic_name: {"0": 4, "1": -2, "2": 29}}),
                         endingOffsets=json.dumps({topic_name: {"0": 11, "1": 3, "2": -1}}))
    assert rows(between) == [r for r in expected if (r[0] == 0 and 4 <= r[1] < 11) or (r[0] == 1 and r[1] < 3)
                             or (r[0] == 2 and r[1] >= 29)]
    # The weir source answers the same question the same way.
    weir = (spark.read.format("weir").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic_name)
            .option("includeHeaders", "true")
            .option("startingOffsets", json.dumps({topic_name: {"0": 4, "1": -2, "2": 29}}))
            .option("endingOffsets", json.dumps({topic_name: {"0": 11, "1": 3, "2": -1}})).load())
    assert rows(weir) == rows(between)


def write_transactions(bootstrap, topic, transactional_id, rounds, stop: threading.Event):
    """Alternating committed and aborted transactions of 5 records over 2 partitions."""
    producer = CKProducer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 1})
    producer.init_transactions(30)
    for n in range(rounds):
        if stop.is_set():
            break
        commit = n % 2 == 0
        producer.begin_transaction()
        for i in range(5):
            producer.produce(topic, value=f"{'committed' if commit else 'aborted'}-{n}-{i}".encode(), partition=i % 2)
        producer.flush()  # librdkafka's abort purges records not yet sent; these must reach the log
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)


def memory_rows(spark, table):
    return [r.value for r in spark.sql(f"SELECT CAST(value AS STRING) AS value FROM {table}").collect()]


def test_read_committed_stream_never_shows_an_aborted_record(spark, any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    table = topic_name.replace("-", "_")
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic_name).option("startingOffsets", "earliest")
              .option("kafka.isolation.level", "read_committed")
              # Small batches whose ends fall inside transactions, aborted ones and on their markers.
              .option("maxOffsetsPerTrigger", "7").load())
    query = stream.writeStream.format("memory").queryName(table).trigger(processingTime="200 milliseconds").start()
    stop = threading.Event()
    rounds = 8
    writer = threading.Thread(target=write_transactions, args=(bootstrap, topic_name, f"{topic_name}-tx", rounds, stop))
    try:
        writer.start()
        writer.join(120)
        assert not writer.is_alive()
        expected = sorted(f"committed-{n}-{i}" for n in range(0, rounds, 2) for i in range(5))
        deadline = time.monotonic() + 60
        while len(memory_rows(spark, table)) < len(expected) and time.monotonic() < deadline:
            query.processAllAvailable()
        assert query.exception() is None
        assert sorted(memory_rows(spark, table)) == expected
        batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
        assert len(batches) >= 2 and all(p["numInputRows"] <= 7 for p in batches)
    finally:
        stop.set()
        query.stop()


def test_built_in_sink_writes_batch_and_stream(spark, any_broker, topic_name, tmp_path):
    bootstrap = any_broker.bootstrap
    batch_topic, source_topic, stream_topic = (f"{topic_name}-{suffix}" for suffix in ("batch", "in", "out"))
    for name in (batch_topic, source_topic, stream_topic):
        create_topic(bootstrap, name, 2)
    rows_in = spark.createDataFrame([(f"k{i}", f"value {i}", [("h", b"x")]) for i in range(300)],
                                    "key string, value string, headers array<struct<key: string, value: binary>>")
    rows_in.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", batch_topic).save()
    written = ck_read(bootstrap, batch_topic, expected=300)
    assert sorted((k, v) for _p, _o, k, v, _h, _t in written) == \
        sorted((f"k{i}".encode(), f"value {i}".encode()) for i in range(300))
    assert all(h == [("h", b"x")] for *_rest, h, _t in written)

    produce(bootstrap, source_topic, 200, 2)
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source_topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "70").load())
    query = (stream.selectExpr("key", "UPPER(CAST(value AS STRING)) AS value").writeStream.format("kafka")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", stream_topic)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    copied = ck_read(bootstrap, stream_topic, expected=200)
    # At least once in general; with no failure here, exactly the input.
    assert sorted((k, v) for _p, _o, k, v, _h, _t in copied) == \
        sorted((f"k{i}".encode(), f"V{i}".encode()) for i in range(200))


@pytest.fixture(scope="module")
def token_broker(tmp_path_factory):
    """Weir with SCRAM and delegation tokens on, for the token test."""
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    settings.update({**sasl_settings(["SASL_PLAINTEXT"]), **token_scenario.token_settings()})
    weir = ConfiguredBroker(tmp_path_factory.mktemp("weir-spark-token"), settings, ports).start()
    yield weir
    weir.stop()


def test_spark_kafka_source_reads_with_a_token(spark, token_broker):
    """A delegation token handed to the connector in its JAAS options (made with the Admin API as
    kafka-delegation-tokens makes it): the way to give a Spark job a token, since Spark obtains one
    itself only with Kerberos (docs/guides/security.md)."""
    broker = token_broker
    plaintext, sasl = broker.bootstrap_for("PLAINTEXT"), broker.bootstrap_for("SASL_PLAINTEXT")
    add_scram_user(plaintext, "alice", "alice-pw")
    producer = CKProducer({"bootstrap.servers": plaintext})
    for i in range(20):
        producer.produce("spark-token", value=f"v{i}".encode())
    assert producer.flush(30) == 0
    alice = scram_login(sasl, "alice", "alice-pw")
    token = token_scenario.create_token(alice)
    alice.close()
    assert token.error_code == 0
    jaas = ("org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{token.token_id}" password="{base64.b64encode(bytes(token.hmac)).decode()}" tokenauth="true";')
    frame = (spark.read.format("kafka").option("kafka.bootstrap.servers", sasl)
             .option("kafka.security.protocol", "SASL_PLAINTEXT").option("kafka.sasl.mechanism", "SCRAM-SHA-512")
             .option("kafka.sasl.jaas.config", jaas).option("subscribe", "spark-token").load())
    assert sorted(bytes(row.value).decode() for row in frame.collect()) == sorted(f"v{i}" for i in range(20))
