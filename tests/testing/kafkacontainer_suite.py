"""A test module written for testcontainers' KafkaContainer (Docker). test_container.py runs
it in a child pytest with only the import line changed to WeirContainer. Not collected here:
its name does not start with test_."""

import confluent_kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from testcontainers.kafka import KafkaContainer


def send_and_count(bootstrap_server, topic):
    producer = KafkaProducer(bootstrap_servers=[bootstrap_server])
    producer.send(topic, b"a message for the container")
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=[bootstrap_server])
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning()
    count = consumer.end_offsets([partition])[partition]
    consumer.close()
    return count


def test_produce_and_count():
    with KafkaContainer() as kafka:
        assert send_and_count(kafka.get_bootstrap_server(), "first-topic") == 1


def test_kraft_and_a_port():
    with KafkaContainer(port=9888).with_kraft() as kafka:
        assert kafka.port == 9888
        assert kafka.kraft_enabled
        host, port = kafka.get_container_host_ip(), kafka.get_exposed_port(9888)
        assert send_and_count(f"{host}:{port}", "second-topic") == 1


def test_environment_and_cluster_id():
    kafka = KafkaContainer().with_cluster_id("MkU3OEVBNTcwNTJENDM2Qk")
    kafka.with_env("KAFKA_NUM_PARTITIONS", "4").with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
    kafka.start()
    try:
        producer = confluent_kafka.Producer({"bootstrap.servers": kafka.get_bootstrap_server()})
        producer.produce("auto-created", b"x")
        assert producer.flush(10) == 0
        metadata = producer.list_topics("auto-created", timeout=10)
        assert metadata.cluster_id == "MkU3OEVBNTcwNTJENDM2Qk"
        assert len(metadata.topics["auto-created"].partitions) == 4
        stdout, stderr = kafka.get_logs()
        assert b"auto-created" in stdout + stderr
    finally:
        kafka.stop()
