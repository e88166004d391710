"""format("weir") against the real broker: batch reads checked against confluent-kafka, batch writes,
and a streaming read resumed from its checkpoint. One module, so one Spark session."""

import json
import time

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer as CKProducer

from tests.security.brokers import ConfiguredBroker, listeners_setting
from weir.testing.certs import Pki
from tests.security.sasl_setup import add_scram_user, sasl_settings
from tests.support.topics import KEEP_FOREVER, create_topic


def ck_read(bootstrap, topic, isolation="read_committed", expected=None, timeout=20.0):
    """(partition, offset, key, value, headers, timestamp ms) of every record, as librdkafka sees them."""
    consumer = CKConsumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}-{time.monotonic()}",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           "isolation.level": isolation, "enable.partition.eof": True})
    consumer.subscribe([topic])
    out, eof, deadline = [], set(), time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                eof.add(message.partition())
                if expected is None and len(eof) == len(consumer.assignment()) and consumer.assignment():
                    break
                continue
            out.append((message.partition(), message.offset(), message.key(), message.value(),
                        [(k, v) for k, v in (message.headers() or [])], message.timestamp()[1]))
            if expected is not None and len(out) >= expected:
                break
    finally:
        consumer.close()
    return sorted(out)


@pytest.fixture(scope="module")
def topic(shared_broker):
    """Three partitions: plain records with headers, a committed and an aborted transaction."""
    name = "orders-batch"
    create_topic(shared_broker.bootstrap, name, 3, KEEP_FOREVER)
    plain = CKProducer({"bootstrap.servers": shared_broker.bootstrap, "linger.ms": 5})
    for i in range(60):
        plain.produce(name, value=f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 3,
                      headers=[("n", str(i).encode())], timestamp=1_700_000_000_000 + i * 1000)
    plain.flush()
    txn = CKProducer({"bootstrap.servers": shared_broker.bootstrap, "transactional.id": "batch-writer"})
    txn.init_transactions()
    for commit in (True, False):
        txn.begin_transaction()
        for i in range(9):
            txn.produce(name, value=f"{'kept' if commit else 'aborted'}{i}".encode(), partition=i % 3,
                        timestamp=1_750_000_000_000)  # in the past: Kafka refuses records over an hour ahead
        txn.flush()  # librdkafka's abort would otherwise purge records it has not sent yet
        txn.commit_transaction() if commit else txn.abort_transaction()
    return name


def load(spark, bootstrap, **options):
    reader = spark.read.format("weir").option("kafka.bootstrap.servers", bootstrap)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def spark_rows(df):
    return sorted((r.partition, r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers],
                   int(r.timestamp.timestamp() * 1000)) for r in df.collect())


def test_batch_read_equals_what_confluent_kafka_reads(spark, shared_broker, topic):
    df = load(spark, shared_broker.bootstrap, subscribe=topic, includeHeaders="true", minPartitions="7")
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    assert df.rdd.getNumPartitions() >= 7  # three topic-partitions split further
    rows = spark_rows(df)
    assert rows == ck_read(shared_broker.bootstrap, topic)
    values = {r[3] for r in rows}
    assert {f"kept{i}".encode() for i in range(9)} <= values
    assert not any(v.startswith(b"aborted") for v in values)  # read_committed by default
    assert {r.timestampType for r in df.select("timestampType").distinct().collect()} == {0}


def test_read_uncommitted_shows_the_aborted_transaction(spark, shared_broker, topic):
    df = load(spark, shared_broker.bootstrap, subscribe=topic, **{"kafka.isolation.level": "read_uncommitted"})
    values = [r.value for r in df.select("value").collect()]
    assert sum(v.startswith(b"aborted") for v in values) == 9
    assert len(values) == 60 + 18


def test_offsets_timestamps_assign_and_pattern(spark, shared_broker, topic):
    bootstrap = shared_broker.bootstrap
    expected = ck_read(bootstrap, topic)
    by_json = load(spark, bootstrap, assign=json.dumps({topic: [0, 2]}),
                   startingOffsets=json.dumps({topic: {"0": 5, "2": -2}}),
                   endingOffsets=json.dumps({topic: {"0": 12, "2": -1}}))
    assert [(r.partition, r.offset) for r in by_json.orderBy("partition", "offset").collect()] == \
        [(p, o) for p, o, *_ in expected if (p == 0 and 5 <= o < 12) or p == 2]
    # The first record at or after a timestamp, per partition: records 30.. (10 per partition from offset 10).
    by_time = load(spark, bootstrap, subscribe=topic, startingTimestamp=str(1_700_000_000_000 + 30_000))
    assert sorted(r.value for r in by_time.collect()) == sorted(
        v for _p, _o, _k, v, _h, ts in expected if ts >= 1_700_000_000_000 + 30_000)
    by_partition_time = load(spark, bootstrap, subscribe=topic, startingOffsetsByTimestamp=json.dumps(
        {topic: {"0": 1_750_000_000_000, "1": 0, "2": 0}}))
    assert sorted(r.value for r in by_partition_time.where("partition = 0").collect()) == \
        [b"kept0", b"kept3", b"kept6"]
    by_pattern = load(spark, bootstrap, subscribePattern="orders-b.*")
    assert by_pattern.count() == len(expected)


def test_options_spark_refuses_are_refused(spark, shared_broker, topic):
    with pytest.raises(Exception, match="use startingOffsets instead"):
        load(spark, shared_broker.bootstrap, subscribe=topic, **{"kafka.auto.offset.reset": "earliest"}).count()
    with pytest.raises(Exception, match="can not be latest for a batch query"):
        load(spark, shared_broker.bootstrap, subscribe=topic, startingOffsets="latest").count()


def test_batch_write_lands_every_row_once(spark, shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    source = spark.createDataFrame([(f"k{i}", f"value {i}", [("h", b"x")]) for i in range(200)],
                                   "key string, value string, headers array<struct<key: string, value: binary>>")
    source.write.mode("append").format("weir").option("kafka.bootstrap.servers", bootstrap) \
        .option("topic", topic_name).save()
    written = ck_read(bootstrap, topic_name, expected=200)
    assert sorted((k, v) for _p, _o, k, v, _h, _t in written) == \
        sorted((f"k{i}".encode(), f"value {i}".encode()) for i in range(200))
    assert all(h == [("h", b"x")] for *_rest, h, _t in written)


def produce_values(bootstrap, topic, values):
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
    produce_values(bootstrap, topic_name, [f"first {i}".encode() for i in range(60)])
    checkpoint, output = str(tmp_path / "checkpoint"), str(tmp_path / "out")

    batches = run_once(spark, bootstrap, topic_name, checkpoint, output)
    assert sum(b["numInputRows"] for b in batches) == 60
    assert len(batches) >= 3 and all(b["numInputRows"] <= 25 for b in batches)  # maxOffsetsPerTrigger
    assert sum(json.loads(batches[-1]["sources"][0]["endOffset"])[topic_name].values()) == 60  # Kafka's JSON

    produce_values(bootstrap, topic_name, [f"second {i}".encode() for i in range(40)])
    resumed = run_once(spark, bootstrap, topic_name, checkpoint, output)
    assert sum(b["numInputRows"] for b in resumed) == 40  # only what came after the committed batches

    values = sorted(r.value for r in spark.read.parquet(output).collect())
    assert values == sorted([f"first {i}" for i in range(60)] + [f"second {i}" for i in range(40)])


@pytest.fixture(scope="module")
def sasl_ssl_broker(tmp_path_factory):
    """A broker whose SASL_SSL listener wants SCRAM-SHA-512 over TLS (a PLAINTEXT one creates the user)."""
    pki = Pki(tmp_path_factory.mktemp("pipeline-pki"))
    server = pki.issue("broker", [("CN", "localhost")], server=True)
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_SSL": "SASL_SSL"})
    settings.update({**sasl_settings(["SASL_SSL"]), "ssl.keystore.type": "PEM",
                     "ssl.keystore.location": str(server.keystore_path)})
    broker = ConfiguredBroker(tmp_path_factory.mktemp("pipeline-sasl-ssl"), settings, ports).start()
    add_scram_user(broker.bootstrap_for("PLAINTEXT"), "spark", "spark-secret")
    broker.ca_path = pki.ca_path
    yield broker
    broker.stop()


def test_source_and_sink_pass_kafka_security_options_through(spark, sasl_ssl_broker, topic_name):
    """kafka.security.protocol, kafka.sasl.* and kafka.ssl.* as Spark's Kafka connector takes them."""
    security = {"kafka.bootstrap.servers": sasl_ssl_broker.bootstrap_for("SASL_SSL").replace("127.0.0.1", "localhost"),
                "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
                "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                          'username="spark" password="spark-secret";',
                "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": str(sasl_ssl_broker.ca_path)}
    create_topic(sasl_ssl_broker.bootstrap_for("PLAINTEXT"), topic_name, 1)
    rows = spark.createDataFrame([(f"value {i}",) for i in range(50)], "value string")
    rows.write.mode("append").format("weir").options(**security).option("topic", topic_name).save()
    read = spark.read.format("weir").options(**security).option("subscribe", topic_name).load()
    assert sorted(bytes(r.value) for r in read.collect()) == sorted(f"value {i}".encode() for i in range(50))

    wrong = {**security, "kafka.sasl.jaas.config": security["kafka.sasl.jaas.config"].replace("spark-secret", "no")}
    with pytest.raises(Exception, match="SASL_AUTHENTICATION_FAILED|Authentication failed"):
        spark.read.format("weir").options(**wrong).option("subscribe", topic_name).load().collect()
    with pytest.raises(Exception, match="PEM stores only"):
        spark.read.format("weir").options(**{**security, "kafka.ssl.truststore.type": "JKS"}) \
            .option("subscribe", topic_name).load().collect()
