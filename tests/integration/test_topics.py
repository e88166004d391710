"""CreateTopics / DeleteTopics / DescribeConfigs answers as Kafka gives them, through a third-party admin client."""

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.broker_process import BrokerProcess


def create(admin, *topics, validate_only=False):
    futures = admin.create_topics(list(topics), validate_only=validate_only, operation_timeout=10)
    outcome = {}
    for name, future in futures.items():
        try:
            future.result(10)
            outcome[name] = None
        except Exception as exc:
            outcome[name] = exc.args[0].code()
    return outcome


def test_create_topics_validation(shared_broker, topic_name):
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    assert create(admin, NewTopic(topic_name, 2, 1)) == {topic_name: None}
    assert create(admin, NewTopic(topic_name, 2, 1)) == {topic_name: KafkaError.TOPIC_ALREADY_EXISTS}
    assert create(admin, NewTopic("bad/name", 1, 1)) == {"bad/name": KafkaError.TOPIC_EXCEPTION}
    assert create(admin, NewTopic(topic_name + "-rf", 1, 3)) == {
        topic_name + "-rf": KafkaError.INVALID_REPLICATION_FACTOR}
    assert create(admin, NewTopic(topic_name + "-cfg", 1, 1, config={"no.such.config": "1"})) == {
        topic_name + "-cfg": KafkaError.INVALID_CONFIG}
    assert create(admin, NewTopic(topic_name + "-none", 1, 1, config={"compression.type": "none"})) == {
        topic_name + "-none": KafkaError.INVALID_CONFIG}, "Kafka's topic codec names: uncompressed, not none"
    assert create(admin, NewTopic(topic_name + "-diff", 1, 1, config={
        "message.timestamp.difference.max.ms": "1000"})) == {
        topic_name + "-diff": KafkaError.INVALID_CONFIG}, "removed in Kafka 4 (KIP-937)"
    assert create(admin, NewTopic(topic_name + "-lat", 1, 1, config={
        "message.timestamp.type": "LogAppendTime", "compression.type": "zstd", "compression.zstd.level": "7",
        "message.timestamp.after.max.ms": "1000"})) == {topic_name + "-lat": None}
    assert create(admin, NewTopic(topic_name + "-dry", 1, 1), validate_only=True) == {topic_name + "-dry": None}
    assert topic_name + "-dry" not in admin.list_topics(timeout=10).topics


def test_topic_config_overrides_are_described_and_survive_restart(tmp_path, topic_name):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        assert create(admin, NewTopic(topic_name, 1, 1, config={"retention.ms": "12345"})) == {topic_name: None}
        broker.stop()
        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        [future] = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name)]).values()
        entries = future.result(10)
        assert entries["retention.ms"].value == "12345"
        assert entries["segment.bytes"].value == "1073741824"
    finally:
        broker.stop()


def test_delete_topics(shared_broker, topic_name):
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    create(admin, NewTopic(topic_name, 1, 1))
    admin.delete_topics([topic_name], operation_timeout=10)[topic_name].result(10)
    assert topic_name not in admin.list_topics(timeout=10).topics
    assert not (shared_broker.data_dir / f"{topic_name}-0").exists()
    with pytest.raises(Exception) as err:
        admin.delete_topics([topic_name], operation_timeout=10)[topic_name].result(10)
    assert err.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_auto_create_can_be_disabled(tmp_path, topic_name):
    broker = BrokerProcess(tmp_path / "data", overrides={"auto.create.topics.enable": "false"}).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        answer = admin.list_topics(topic_name, timeout=10).topics[topic_name]
        assert answer.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        errors = []
        producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 1000})
        producer.produce(topic_name, b"v", on_delivery=lambda err, msg: errors.append(err))
        producer.flush(10)
        assert len(errors) == 1 and errors[0] is not None, "the record cannot be delivered"
        assert not (tmp_path / "data" / f"{topic_name}-0").exists()
    finally:
        broker.stop()
