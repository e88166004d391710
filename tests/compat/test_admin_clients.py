"""The admin APIs through third-party admin clients: confluent-kafka (librdkafka) and kafka-python."""

import pytest
from confluent_kafka import KafkaError, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (AclOperation, AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, NewPartitions, NewTopic)
from kafka import KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KafkaNewTopic

CLUSTER_OPERATIONS = {AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                      AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                      AclOperation.DESCRIBE}
TOPIC_OPERATIONS = {AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                    AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                    AclOperation.ALTER_CONFIGS}


@pytest.fixture
def admin(shared_broker):
    return AdminClient({"bootstrap.servers": shared_broker.bootstrap})


def create(admin, name, partitions=1, **config):
    [future] = admin.create_topics([NewTopic(name, partitions, 1, config=config)], operation_timeout=10).values()
    future.result(10)


def error_code(future):
    with pytest.raises(Exception) as raised:
        future.result(10)
    return raised.value.args[0].code()


def test_describe_cluster_and_topics_with_authorized_operations(admin):
    cluster = admin.describe_cluster(include_authorized_operations=True, request_timeout=10).result(10)
    assert [node.id for node in cluster.nodes] == [0] and cluster.controller.id == 0
    assert set(cluster.authorized_operations) == CLUSTER_OPERATIONS
    create(admin, "ops-topic")
    [future] = admin.describe_topics(TopicCollection(["ops-topic"]), include_authorized_operations=True).values()
    assert set(future.result(10).authorized_operations) == TOPIC_OPERATIONS


def test_create_partitions(admin, topic_name):
    create(admin, topic_name, 1)
    [future] = admin.create_partitions([NewPartitions(topic_name, 3)], validate_only=True).values()
    future.result(10)
    assert len(admin.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == 1
    [future] = admin.create_partitions([NewPartitions(topic_name, 3)]).values()
    future.result(10)
    assert len(admin.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == 3
    [future] = admin.create_partitions([NewPartitions(topic_name, 2)]).values()
    assert error_code(future) == KafkaError.INVALID_PARTITIONS


def test_alter_and_describe_configs(admin, topic_name):
    create(admin, topic_name)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
    [future] = admin.incremental_alter_configs([resource]).values()
    future.result(10)
    [future] = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name)]).values()
    entries = future.result(10)
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["cleanup.policy"].value == "delete,compact"
    assert entries["flush.ms"].value == "9223372036854775807"
    assert entries["flush.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    # the legacy API replaces the whole set
    [future] = admin.alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name,
                                                   set_config={"segment.bytes": "1048576"})]).values()
    future.result(10)
    [future] = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name)]).values()
    entries = future.result(10)
    assert entries["segment.bytes"].value == "1048576"
    assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_broker_configs(admin):
    [future] = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "0")]).values()
    entries = future.result(10)
    assert entries["log.segment.bytes"].is_read_only is False
    assert entries["num.partitions"].is_read_only is True
    resource = ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.hours", "1", incremental_operation=AlterConfigOpType.SET)])
    [future] = admin.incremental_alter_configs([resource]).values()
    assert error_code(future) == KafkaError.INVALID_REQUEST


def test_delete_records(admin, shared_broker, topic_name):
    create(admin, topic_name)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap})
    for n in range(10):
        producer.produce(topic_name, b"%d" % n, partition=0)
    assert producer.flush(10) == 0
    [future] = admin.delete_records([TopicPartition(topic_name, 0, 4)]).values()
    assert future.result(10).low_watermark == 4
    [future] = admin.delete_records([TopicPartition(topic_name, 0, 20)]).values()
    assert error_code(future) == KafkaError.OFFSET_OUT_OF_RANGE


def test_kafka_python_transactions_and_producers(shared_broker, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        admin.create_topics([KafkaNewTopic(topic_name, 1, 1)])
        producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap, transactional_id=f"{topic_name}-tx")
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic_name, b"in flight", partition=0).get(10)
        try:
            [description] = admin.describe_transactions([f"{topic_name}-tx"]).values()
            assert str(description.state.value) == "Ongoing"
            assert description.topic_partitions == {KafkaTopicPartition(topic_name, 0)}
            listed = admin.list_transactions(state_filters=["Ongoing"])
            assert f"{topic_name}-tx" in [t.transactional_id for t in listed[0]]
            tp = KafkaTopicPartition(topic_name, 0)
            [producer_state] = admin.describe_producers([tp])[tp].active_producers
            assert producer_state.producer_id == description.producer_id
            assert producer_state.current_transaction_start_offset == 0
        finally:
            producer.abort_transaction()
            producer.close()
    finally:
        admin.close()


def test_kafka_python_partitions_records_and_configs(shared_broker, topic_name):
    from kafka.admin import ConfigResource as KafkaConfigResource
    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        admin.create_topics([KafkaNewTopic(topic_name, 1, 1)])
        assert admin.describe_cluster()["controller_id"] == 0
        admin.create_partitions({topic_name: 2})
        producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap)
        for n in range(5):
            producer.send(topic_name, b"%d" % n, partition=1)
        producer.flush(10)
        producer.close()
        tp = KafkaTopicPartition(topic_name, 1)
        deleted = admin.delete_records({tp: 3})
        assert deleted[tp]["low_watermark"] == 3
        # legacy AlterConfigs: the client re-sends the topic's current dynamic configs, which it finds
        # by their DYNAMIC_TOPIC_CONFIG source in DescribeConfigs; both must survive the second call
        admin.alter_configs([KafkaConfigResource("TOPIC", topic_name, {"retention.ms": "3600000"})],
                            incremental=False)
        admin.alter_configs([KafkaConfigResource("TOPIC", topic_name, {"segment.bytes": "1048576"})],
                            incremental=False)
        modified = admin.describe_configs([KafkaConfigResource("TOPIC", topic_name)])["topic"][topic_name]
        assert {name: entry["value"] for name, entry in modified.items()} == {
            "retention.ms": "3600000", "segment.bytes": "1048576"}
    finally:
        admin.close()
