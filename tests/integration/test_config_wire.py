"""AlterConfigs, IncrementalAlterConfigs and DescribeConfigs on the wire: Kafka's errors, values,
sources and synonyms, persistence across a restart, and the effect on live partitions."""

import pytest

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import (alter_configs, create_topics, describe_configs, incremental_alter_configs, metadata,
                                    produce)
from weir.protocol.records import Record, encode_batch
from tests.broker_process import BrokerProcess

TOPIC, BROKER = 2, 4
TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LONG_MAX = 9223372036854775807
T = "cfg"


async def open_with_topic(broker):
    conn = await Connection.open("127.0.0.1", broker.port)
    await conn.request(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(timeout_ms=5000, topics=[
        create_topics.CreatableTopic(name=T, num_partitions=2, replication_factor=1, assignments=[], configs=[])]))
    return conn


@pytest.fixture
async def conn(broker):
    connection = await open_with_topic(broker)
    yield connection
    await connection.close()


async def incremental(conn, resource_type, name, *ops, validate_only=False, version=1):
    answer = await conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, version, incremental_alter_configs.REQUEST(
        validate_only=validate_only, resources=[incremental_alter_configs.Resource(
            resource_type=resource_type, resource_name=name, configs=[
                incremental_alter_configs.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])]))
    [result] = answer.responses
    assert (result.resource_type, result.resource_name) == (resource_type, name)
    return result.error_code


async def legacy(conn, resource_type, name, configs, validate_only=False, version=2):
    answer = await conn.request(ApiKey.ALTER_CONFIGS, version, alter_configs.REQUEST(
        validate_only=validate_only, resources=[alter_configs.Resource(
            resource_type=resource_type, resource_name=name, configs=[
                alter_configs.AlterableConfig(name=n, value=v) for n, v in configs.items()])]))
    return answer.responses[0].error_code


async def describe(conn, resource_type, name, keys=None, version=4, synonyms=True, docs=False):
    answer = await conn.request(ApiKey.DESCRIBE_CONFIGS, version, describe_configs.REQUEST(
        resources=[describe_configs.Resource(resource_type=resource_type, resource_name=name,
                                                            configuration_keys=keys)],
        include_synonyms=synonyms, include_documentation=docs))
    [result] = answer.results
    return result.error_code, {entry.name: entry for entry in result.configs}


async def test_topic_defaults_are_described_with_kafka_values_and_sources(conn):
    error, entries = await describe(conn, TOPIC, T, docs=True)
    assert error == Errors.NONE
    flush = entries["flush.ms"]
    assert (flush.value, flush.config_source, flush.synonyms, flush.read_only) == (str(LONG_MAX), DEFAULT, [], False)
    assert flush.config_type == 5 and flush.documentation  # LONG
    assert entries["retention.ms"].value == "604800000"
    assert entries["cleanup.policy"].value == "delete" and entries["cleanup.policy"].config_type == 7  # LIST
    segment = entries["segment.bytes"]
    assert [(s.name, s.value, s.source) for s in segment.synonyms] == [("log.segment.bytes", "1073741824", DEFAULT)]
    error, only = await describe(conn, TOPIC, T, keys=["retention.bytes"], version=1, synonyms=False)
    assert list(only) == ["retention.bytes"] and only["retention.bytes"].synonyms == []


async def test_incremental_topic_changes_are_described_persisted_and_live(broker, conn):
    assert await incremental(conn, TOPIC, T, ("retention.ms", SET, "1000"), ("max.message.bytes", SET, "100")) \
        == Errors.NONE
    error, entries = await describe(conn, TOPIC, T)
    retention = entries["retention.ms"]
    assert (retention.value, retention.config_source) == ("1000", TOPIC_CONFIG)
    assert [(s.name, s.value, s.source) for s in retention.synonyms][0] == ("retention.ms", "1000", TOPIC_CONFIG)
    # live: the partitions refuse a batch over the new max.message.bytes at once
    batch = encode_batch([Record(b"x" * 200)])
    answer = await conn.request(ApiKey.PRODUCE, 9, produce.REQUEST(acks=-1, timeout_ms=5000, topic_data=[
        produce.TopicData(name=T, partition_data=[produce.PartitionData(index=1, records=batch)])]))
    assert answer.responses[0].partition_responses[0].error_code == Errors.MESSAGE_TOO_LARGE
    assert await incremental(conn, TOPIC, T, ("max.message.bytes", DELETE, None)) == Errors.NONE
    await conn.close()
    broker.stop()
    broker.start()
    conn2 = await Connection.open("127.0.0.1", broker.port)
    try:
        error, entries = await describe(conn2, TOPIC, T)
        assert (entries["retention.ms"].value, entries["retention.ms"].config_source) == ("1000", TOPIC_CONFIG)
        assert (entries["max.message.bytes"].value, entries["max.message.bytes"].config_source) == ("1048588", DEFAULT)
    finally:
        await conn2.close()


async def test_incremental_append_subtract_and_errors(conn):
    assert await incremental(conn, TOPIC, T, ("cleanup.policy", APPEND, "compact"), version=0) == Errors.NONE
    assert (await describe(conn, TOPIC, T))[1]["cleanup.policy"].value == "delete,compact"
    assert await incremental(conn, TOPIC, T, ("cleanup.policy", SUBTRACT, "delete")) == Errors.NONE
    assert (await describe(conn, TOPIC, T))[1]["cleanup.policy"].value == "compact"
    assert await incremental(conn, TOPIC, T, ("retention.ms", APPEND, "5")) == Errors.INVALID_CONFIG
    assert await incremental(conn, TOPIC, T, ("no.such.config", SET, "1")) == Errors.INVALID_CONFIG
    assert await incremental(conn, TOPIC, T, ("retention.ms", SET, "abc")) == Errors.INVALID_CONFIG
    assert await incremental(conn, TOPIC, T, ("retention.ms", SET, None)) == Errors.INVALID_REQUEST
    assert await incremental(conn, TOPIC, T, ("retention.ms", SET, "1"), ("retention.ms", DELETE, None)) \
        == Errors.INVALID_REQUEST
    assert await incremental(conn, TOPIC, T, ("retention.ms", 9, "1")) == Errors.INVALID_REQUEST
    assert await incremental(conn, TOPIC, "missing", ("retention.ms", SET, "1")) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert await incremental(conn, TOPIC, "bad/name", ("retention.ms", SET, "1")) == Errors.INVALID_TOPIC_EXCEPTION
    assert await incremental(conn, 8, "0", ("root", SET, "INFO")) == Errors.INVALID_REQUEST  # BROKER_LOGGER
    # a failed resource changes nothing, not even its valid configs
    assert await incremental(conn, TOPIC, T, ("retention.ms", SET, "7"), ("segment.bytes", SET, "1")) \
        == Errors.INVALID_CONFIG
    assert (await describe(conn, TOPIC, T))[1]["retention.ms"].config_source == DEFAULT


async def test_validate_only_changes_nothing(conn):
    assert await incremental(conn, TOPIC, T, ("retention.ms", SET, "1000"), validate_only=True) == Errors.NONE
    assert await legacy(conn, TOPIC, T, {"retention.ms": "1000"}, validate_only=True) == Errors.NONE
    assert await incremental(conn, BROKER, "0", ("log.retention.ms", SET, "1000"), validate_only=True) == Errors.NONE
    error, entries = await describe(conn, TOPIC, T)
    assert entries["retention.ms"].config_source == DEFAULT
    error, entries = await describe(conn, BROKER, "0", keys=["log.retention.ms"])
    assert entries["log.retention.ms"].value is None


async def test_legacy_alter_configs_replaces_the_whole_set(conn):
    assert await legacy(conn, TOPIC, T, {"retention.ms": "1000", "segment.bytes": "100000"}, version=0) == Errors.NONE
    assert await legacy(conn, TOPIC, T, {"segment.bytes": "200000"}) == Errors.NONE
    error, entries = await describe(conn, TOPIC, T)
    assert (entries["segment.bytes"].value, entries["segment.bytes"].config_source) == ("200000", TOPIC_CONFIG)
    assert entries["retention.ms"].config_source == DEFAULT, "left out = removed"
    assert await legacy(conn, TOPIC, T, {"retention.ms": None}) == Errors.INVALID_REQUEST
    assert await legacy(conn, TOPIC, T, {"cleanup.policy": "bogus"}) == Errors.INVALID_CONFIG
    assert await legacy(conn, BROKER, "0", {"num.partitions": "3"}) == Errors.INVALID_REQUEST
    answer = await conn.request(ApiKey.ALTER_CONFIGS, 1, alter_configs.REQUEST(resources=[
        alter_configs.Resource(resource_type=TOPIC, resource_name=T, configs=[]),
        alter_configs.Resource(resource_type=TOPIC, resource_name=T, configs=[])]))
    assert [r.error_code for r in answer.responses] == [Errors.INVALID_REQUEST] * 2


async def test_dynamic_broker_configs_rank_and_persist(broker, conn):
    assert await incremental(conn, BROKER, "", ("log.retention.bytes", SET, "5000")) == Errors.NONE
    assert await incremental(conn, BROKER, "0", ("log.retention.bytes", SET, "6000")) == Errors.NONE
    error, entries = await describe(conn, BROKER, "0")
    entry = entries["log.retention.bytes"]
    assert (entry.value, entry.config_source, entry.read_only) == ("6000", DYNAMIC_BROKER, False)
    assert [(s.value, s.source) for s in entry.synonyms] == [("6000", DYNAMIC_BROKER), ("5000", DYNAMIC_DEFAULT),
                                                              ("-1", DEFAULT)]
    assert entries["num.partitions"].read_only
    error, defaults = await describe(conn, BROKER, "")
    assert list(defaults) == ["log.retention.bytes"]
    assert [(s.value, s.source) for s in defaults["log.retention.bytes"].synonyms] == [("5000", DYNAMIC_DEFAULT)]
    # the topic without an override follows the broker setting
    error, topic = await describe(conn, TOPIC, T)
    assert (topic["retention.bytes"].value, topic["retention.bytes"].config_source) == ("6000", DYNAMIC_BROKER)
    await conn.close()
    broker.stop()
    broker.start()
    conn2 = await Connection.open("127.0.0.1", broker.port)
    try:
        error, topic = await describe(conn2, TOPIC, T)
        assert topic["retention.bytes"].value == "6000"
        assert await incremental(conn2, BROKER, "0", ("log.retention.bytes", DELETE, None)) == Errors.NONE
        error, topic = await describe(conn2, TOPIC, T)
        assert (topic["retention.bytes"].value, topic["retention.bytes"].config_source) == ("5000", DYNAMIC_DEFAULT)
    finally:
        await conn2.close()


async def test_broker_config_errors(conn):
    assert await incremental(conn, BROKER, "0", ("log.retention.hours", SET, "1")) == Errors.INVALID_REQUEST
    assert await incremental(conn, BROKER, "0", ("auto.create.topics.enable", SET, "false")) == Errors.INVALID_REQUEST
    assert await incremental(conn, BROKER, "0", ("log.segment.bytes", SET, "x")) == Errors.INVALID_REQUEST
    assert await incremental(conn, BROKER, "7", ("log.segment.bytes", SET, "100000")) == Errors.INVALID_REQUEST
    assert await incremental(conn, BROKER, "abc", ("log.segment.bytes", SET, "100000")) == Errors.INVALID_REQUEST
    assert await incremental(conn, BROKER, "0", ("log.segment.bytes", APPEND, "1")) == Errors.INVALID_CONFIG
    assert (await describe(conn, BROKER, "7"))[0] == Errors.INVALID_REQUEST
    assert (await describe(conn, TOPIC, "missing"))[0] == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_static_broker_settings_are_static_broker_config(tmp_path):
    import asyncio

    broker = BrokerProcess(tmp_path / "data", overrides={"log.segment.bytes": "500000"}).start()

    async def check():
        conn = await open_with_topic(broker)
        try:
            error, entries = await describe(conn, BROKER, "0")
            assert (entries["log.segment.bytes"].value, entries["log.segment.bytes"].config_source) == \
                ("500000", STATIC)
            error, topic = await describe(conn, TOPIC, T)
            segment = topic["segment.bytes"]
            assert (segment.value, segment.config_source) == ("500000", STATIC)
            assert [(s.name, s.source) for s in segment.synonyms] == [("log.segment.bytes", STATIC),
                                                                      ("log.segment.bytes", DEFAULT)]
        finally:
            await conn.close()
    try:
        asyncio.run(check())
    finally:
        broker.stop()


@pytest.mark.parametrize("version", [5, 7])
async def test_create_topics_v5_answers_partitions_replication_and_configs(broker, version):
    """KIP-525: the Java Admin reads numPartitions, replicationFactor, config and (v7) topicId
    from the CreateTopics answer; before v5 was served it raised UnsupportedVersionException."""
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        answer = await conn.request(ApiKey.CREATE_TOPICS, version, create_topics.REQUEST(timeout_ms=5000, topics=[
            create_topics.CreatableTopic(name="kip525", num_partitions=3, replication_factor=1, assignments=[],
                                         configs=[create_topics.CreatableTopicConfig(name="retention.ms",
                                                                                     value="3600000")]),
            create_topics.CreatableTopic(name="kip525", num_partitions=1, replication_factor=1, assignments=[],
                                         configs=[])]))
        created, again = answer.topics
        assert again.error_code == Errors.INVALID_REQUEST  # the name twice: neither is created
        assert (again.num_partitions, again.replication_factor, again.configs) == (-1, -1, [])
        answer = await conn.request(ApiKey.CREATE_TOPICS, version, create_topics.REQUEST(timeout_ms=5000, topics=[
            create_topics.CreatableTopic(name="kip525", num_partitions=3, replication_factor=1, assignments=[],
                                         configs=[create_topics.CreatableTopicConfig(name="retention.ms",
                                                                                     value="3600000")])]))
        created = answer.topics[0]
        assert (created.error_code, created.num_partitions, created.replication_factor) == (Errors.NONE, 3, 1)
        configs = {config.name: config for config in created.configs}
        assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("3600000", 1)  # DYNAMIC_TOPIC
        assert (configs["cleanup.policy"].value, configs["cleanup.policy"].config_source) == ("delete", 5)  # DEFAULT
        assert not any(config.is_sensitive or config.read_only for config in created.configs)
        metadata_ids = {t.name: t.topic_id for t in (await conn.request(ApiKey.METADATA, 12, metadata.REQUEST(
            topics=[metadata.RequestTopic(name="kip525")]))).topics}
        assert created.topic_id == (metadata_ids["kip525"] if version >= 7 else bytes(16))
        assert metadata_ids["kip525"] != bytes(16)
    finally:
        await conn.close()


async def test_list_broker_settings_take_append_and_subtract(conn):
    rules = "sasl.kerberos.principal.to.local.rules"  # Kafka's LIST type, default DEFAULT
    try:
        assert await incremental(conn, BROKER, "0", (rules, APPEND, "RULE:x")) == Errors.NONE
        assert (await describe(conn, BROKER, "0"))[1][rules].value == "DEFAULT,RULE:x"
        assert await incremental(conn, BROKER, "0", (rules, SUBTRACT, "DEFAULT")) == Errors.NONE
        assert (await describe(conn, BROKER, "0"))[1][rules].value == "RULE:x"
    finally:
        assert await incremental(conn, BROKER, "0", (rules, DELETE, None)) == Errors.NONE
    assert await incremental(conn, BROKER, "0", ("background.threads", APPEND, "1")) == Errors.INVALID_CONFIG


async def test_settings_without_effect_say_so(conn):
    _error, entries = await describe(conn, TOPIC, T, docs=True)
    assert entries["file.delete.delay.ms"].documentation.startswith("No effect in Weir: ")
    assert not entries["retention.ms"].documentation.startswith("No effect")
    _error, entries = await describe(conn, 32, "any-group", docs=True)  # GROUP
    assert entries["errors.deadletterqueue.topic.name"].documentation.startswith("No effect in Weir: ")
    for acted_on in ("consumer.session.timeout.ms", "share.session.timeout.ms",  # share groups: KIP-932
                     "streams.session.timeout.ms"):  # streams groups: KIP-1071
        assert not entries[acted_on].documentation.startswith("No effect")
