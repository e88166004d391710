"""Admin against the real broker: topics, partitions, configs, records, offsets, the cluster,
each with its success and its Kafka error answers."""

import asyncio

import pytest
from confluent_kafka import Producer as CKProducer

from weir.client import Admin
from weir.client.admin import (EARLIEST, LATEST, AlterConfigOp, ConfigResource, ConfigSource, NewTopic, OpType,
                          ResourceType)
from weir.client.errors import (InvalidConfigError, InvalidPartitionsError, InvalidReplicationFactorError,
                           InvalidRequestError,
                           KafkaConnectionError, KafkaTimeoutError, OffsetOutOfRangeError, PolicyViolationError,
                           TopicAlreadyExistsError, UnknownTopicOrPartitionError)
from weir.client.types import TopicPartition


def produce(bootstrap, topic, partition, count):
    producer = CKProducer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, f"record {i}".encode(), partition=partition)
    assert producer.flush(10) == 0


@pytest.fixture
async def admin(shared_broker):
    async with Admin(shared_broker.bootstrap) as client:
        yield client


async def test_create_describe_list_delete_topic(admin, topic_name):
    await admin.create_topics([NewTopic(topic_name, 3, 1, {"retention.ms": "123456"})])
    assert topic_name in await admin.list_topics()
    assert "__consumer_offsets" not in await admin.list_topics()
    description = (await admin.describe_topics([topic_name]))[topic_name]
    assert not description.internal and description.topic_id
    assert [(p.partition, p.leader, p.replicas, p.isr) for p in description.partitions] == [
        (0, 0, [0], [0]), (1, 0, [0], [0]), (2, 0, [0], [0])]
    configs = (await admin.describe_configs([ConfigResource.topic(topic_name)]))[ConfigResource.topic(topic_name)]
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
        "123456", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert configs["cleanup.policy"].is_default
    await admin.delete_topics([topic_name])
    assert topic_name not in await admin.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError):
        await admin.describe_topics([topic_name])


async def test_internal_topics_are_listed_when_asked(admin, topic_name):
    # the offsets topic exists once a group has committed
    await admin.create_topics([NewTopic(topic_name, 1, 1)])
    await admin.alter_group_offsets(f"{topic_name}-g", {TopicPartition(topic_name, 0): 0})
    assert "__consumer_offsets" in await admin.list_topics(include_internal=True)
    assert (await admin.describe_topics(["__consumer_offsets"]))["__consumer_offsets"].internal


async def test_create_topic_validation_errors(admin, topic_name):
    await admin.create_topics([NewTopic(topic_name, 1, 1)])
    with pytest.raises(TopicAlreadyExistsError, match=topic_name):
        await admin.create_topics([NewTopic(topic_name, 1, 1)])
    with pytest.raises(InvalidConfigError, match="retention.ms"):
        await admin.create_topics([NewTopic(topic_name + "-bad", 1, 1, {"retention.ms": "soon"})])
    with pytest.raises(InvalidPartitionsError):
        await admin.create_topics([NewTopic(topic_name + "-zero", 0, 1)])
    with pytest.raises(InvalidReplicationFactorError):
        await admin.create_topics([NewTopic(topic_name + "-rf", 1, 3)])
    with pytest.raises((InvalidConfigError, PolicyViolationError)):
        await admin.create_topics([NewTopic(topic_name + "-unknown", 1, 1, {"no.such.config": "1"})])
    assert not {topic_name + s for s in ("-bad", "-zero", "-rf", "-unknown")} & set(await admin.list_topics())


async def test_validate_only_creates_nothing(admin, topic_name):
    await admin.create_topics([NewTopic(topic_name, 2, 1)], validate_only=True)
    assert topic_name not in await admin.list_topics()
    with pytest.raises(InvalidConfigError):
        await admin.create_topics([NewTopic(topic_name, 2, 1, {"cleanup.policy": "never"})], validate_only=True)


async def test_delete_unknown_topic(admin, topic_name):
    with pytest.raises(UnknownTopicOrPartitionError, match=topic_name):
        await admin.delete_topics([topic_name])


async def test_create_partitions(admin, topic_name):
    await admin.create_topics([NewTopic(topic_name, 1, 1)])
    await admin.create_partitions({topic_name: 4})
    assert len((await admin.describe_topics([topic_name]))[topic_name].partitions) == 4
    with pytest.raises(InvalidPartitionsError):
        await admin.create_partitions({topic_name: 2})
    with pytest.raises(UnknownTopicOrPartitionError):
        await admin.create_partitions({topic_name + "-none": 2})
    await admin.create_partitions({topic_name: 6}, validate_only=True)
    assert len((await admin.describe_topics([topic_name]))[topic_name].partitions) == 4


async def test_incremental_alter_configs_set_delete_append_subtract(admin, topic_name):
    resource = ConfigResource.topic(topic_name)
    await admin.create_topics([NewTopic(topic_name, 1, 1)])
    await admin.incremental_alter_configs({resource: [AlterConfigOp("retention.ms", "1000"),
                                                      AlterConfigOp("cleanup.policy", "compact", OpType.APPEND)]})
    configs = (await admin.describe_configs([resource]))[resource]
    assert configs["retention.ms"].value == "1000"
    assert configs["cleanup.policy"].value == "delete,compact"
    await admin.incremental_alter_configs({resource: [AlterConfigOp("retention.ms", op=OpType.DELETE),
                                                      AlterConfigOp("cleanup.policy", "delete", OpType.SUBTRACT)]})
    configs = (await admin.describe_configs([resource]))[resource]
    assert configs["retention.ms"].is_default
    assert configs["cleanup.policy"].value == "compact"
    with pytest.raises(InvalidConfigError):
        await admin.incremental_alter_configs({resource: [AlterConfigOp("retention.ms", "forever")]})
    with pytest.raises(UnknownTopicOrPartitionError):
        await admin.incremental_alter_configs({ConfigResource.topic(topic_name + "-none"): [
            AlterConfigOp("retention.ms", "1")]})


async def test_legacy_alter_configs_replaces_every_override(admin, topic_name):
    resource = ConfigResource.topic(topic_name)
    await admin.create_topics([NewTopic(topic_name, 1, 1, {"retention.ms": "5000", "cleanup.policy": "compact"})])
    await admin.alter_configs({resource: {"segment.bytes": "1048576"}})
    configs = (await admin.describe_configs([resource]))[resource]
    assert configs["segment.bytes"].value == "1048576"
    assert configs["retention.ms"].is_default and configs["cleanup.policy"].is_default
    with pytest.raises(InvalidConfigError):
        await admin.alter_configs({resource: {"segment.bytes": "big"}})


async def test_broker_configs(broker):
    async with Admin(broker.bootstrap) as admin:
        resource = ConfigResource.broker(0)
        before = (await admin.describe_configs([resource], include_synonyms=True))[resource]
        assert before["log.retention.ms"].source in (ConfigSource.DEFAULT_CONFIG, ConfigSource.STATIC_BROKER_CONFIG)
        await admin.incremental_alter_configs({resource: [AlterConfigOp("log.retention.ms", "7200000")]})
        after = (await admin.describe_configs([resource], include_synonyms=True))[resource]["log.retention.ms"]
        assert (after.value, after.source) == ("7200000", ConfigSource.DYNAMIC_BROKER_CONFIG)
        assert after.synonyms[0] == ("log.retention.ms", "7200000", ConfigSource.DYNAMIC_BROKER_CONFIG)
        with pytest.raises(InvalidRequestError, match="log.retention.ms"):  # as Kafka answers for a broker
            await admin.incremental_alter_configs({resource: [AlterConfigOp("log.retention.ms", "a while")]})
        with pytest.raises(InvalidRequestError):
            await admin.describe_configs([ConfigResource(ResourceType.BROKER_LOGGER, "0")])
        with pytest.raises(InvalidRequestError, match="broker id"):
            await admin.describe_configs([ConfigResource.broker(7)])


async def test_delete_records_and_list_offsets(admin, shared_broker, topic_name):
    await admin.create_topics([NewTopic(topic_name, 2, 1)])
    await asyncio.to_thread(produce, shared_broker.bootstrap, topic_name, 0, 10)
    tp0, tp1 = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
    assert await admin.list_offsets({tp0: EARLIEST, tp1: LATEST}) == {tp0: 0, tp1: 0}
    assert await admin.list_offsets({tp0: LATEST}) == {tp0: 10}
    assert await admin.delete_records({tp0: 4}) == {tp0: 4}
    assert await admin.list_offsets({tp0: EARLIEST}) == {tp0: 4}
    assert await admin.delete_records({tp0: -1}) == {tp0: 10}  # -1: up to the high watermark
    with pytest.raises(OffsetOutOfRangeError):
        await admin.delete_records({tp0: 11})
    with pytest.raises(UnknownTopicOrPartitionError):
        await admin.delete_records({TopicPartition(topic_name, 9): 0})
    with pytest.raises(UnknownTopicOrPartitionError):
        await admin.list_offsets({TopicPartition(topic_name + "-none", 0): LATEST})


async def test_describe_cluster(admin, shared_broker):
    described = await admin.describe_cluster(include_authorized_operations=True)
    assert described.controller_id == 0 and len(described.cluster_id) == 22
    assert [(b.node_id, b.host, b.port) for b in described.brokers] == [(0, "127.0.0.1", shared_broker.port)]
    assert described.authorized_operations and described.authorized_operations > 0
    assert (await admin.describe_cluster()).authorized_operations is None


async def test_a_call_waits_out_a_broker_restart(broker, topic_name):
    """A lost connection is retriable: the call goes on once the broker is back."""
    async with Admin(broker.bootstrap, retry_backoff_ms=50) as admin:
        await admin.create_topics([NewTopic(topic_name, 1, 1)])
        broker.kill()
        with pytest.raises(KafkaTimeoutError) as unreachable:  # as the Java Admin's TimeoutException
            async with Admin(broker.bootstrap, default_api_timeout_ms=300, request_timeout_ms=300):
                pass
        assert isinstance(unreachable.value.last_cause, KafkaConnectionError)
        call = asyncio.create_task(admin.describe_topics([topic_name]))
        await asyncio.to_thread(broker.start)
        assert len((await call)[topic_name].partitions) == 1


async def test_unreachable_bootstrap_fails_after_the_api_timeout(tmp_path):
    from tests.broker_process import free_port
    with pytest.raises(KafkaTimeoutError) as unreachable:
        async with Admin(f"127.0.0.1:{free_port()}", default_api_timeout_ms=400, retry_backoff_ms=50):
            pass
    assert isinstance(unreachable.value.last_cause, KafkaConnectionError)
