"""The configuration surface Kafka 4 tools and clients expect, on Weir and on Kafka 4.4.0 alike:
group configs (resource type GROUP, 32) through kafka-configs and confluent-kafka's AdminClient,
every topic config Kafka defines on CreateTopics and IncrementalAlterConfigs, and Kafka's
dynamic broker settings (including those Weir accepts without acting on them)."""

from __future__ import annotations

import uuid

from confluent_kafka import KafkaException
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewTopic, ResourceType)

from tests.support.waiting import wait_until
from tests.tools.test_kafka_tools import dynamic_configs, ok
from tests.tools.tools import CONFIGS, create_topics, run_tool


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_group_configs_with_kafka_configs(any_broker):
    group = unique("cfg-group")
    tool = lambda *args: run_tool(CONFIGS, "--bootstrap-server", any_broker.bootstrap,  # noqa: E731
                                  "--entity-type", "groups", "--entity-name", group, *args)
    assert ok(tool("--alter", "--add-config", "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000")
              ).strip() == f"Completed updating config for group {group}."
    described = ok(tool("--describe"))
    assert described.splitlines()[0] == f"Dynamic configs for group {group} are:"
    assert dynamic_configs(described) == {"consumer.session.timeout.ms": "50000",
                                          "consumer.heartbeat.interval.ms": "6000"}
    # the broker's bounds (group.consumer.min/max.session.timeout.ms) hold for a group too
    low = tool("--alter", "--add-config", "consumer.session.timeout.ms=5000")
    assert low.returncode == 1 and ("consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."
                                    in low.stdout + low.stderr)
    unknown = tool("--alter", "--add-config", "consumer.bogus.ms=1")
    assert unknown.returncode == 1 and "Unknown group config name: consumer.bogus.ms" in unknown.stdout + unknown.stderr
    ok(tool("--alter", "--delete-config", "consumer.heartbeat.interval.ms"))
    assert dynamic_configs(ok(tool("--describe"))) == {"consumer.session.timeout.ms": "50000"}
    ok(tool("--alter", "--delete-config", "consumer.session.timeout.ms"))
    assert dynamic_configs(ok(tool("--describe"))) == {}


def _set(admin, resource_type, name, **configs):
    resource = ConfigResource(resource_type, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in configs.items()])
    try:
        admin.incremental_alter_configs([resource])[resource].result(30)
    except KafkaException as exc:
        return exc.args[0].name(), exc.args[0].str()
    return "NO_ERROR", ""


def _describe(admin, resource_type, name):
    resource = ConfigResource(resource_type, name)
    return admin.describe_configs([resource])[resource].result(30)


def _described(admin, resource_type, name, config, value):
    """The entry once it shows ``value``: Kafka's brokers apply a change from the metadata log a moment
    after the controller accepted it."""
    return wait_until(lambda: (entry := _describe(admin, resource_type, name)[config]).value == value and entry,
                      f"{config}={value} described")


def _refusal(admin, resource_type, name, **configs):
    error, _message = _set(admin, resource_type, name, **configs)
    return error


def test_group_configs_with_the_admin_client(any_broker):
    admin, group = AdminClient({"bootstrap.servers": any_broker.bootstrap}), unique("admin-group")
    everything = _describe(admin, ResourceType.GROUP, group)  # a group need not exist to have configs
    assert {name: entry.value for name, entry in everything.items() if name.startswith("consumer.")} == {
        "consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "500",  # SHARED_TEST_SETTINGS
        "consumer.assignment.interval.ms": "1000"}
    assert len(everything) == 21 and everything["share.isolation.level"].value == "read_uncommitted"
    assert {name: everything[name].value for name in ("streams.assignor.name", "errors.deadletterqueue.topic.name",
                                                      "errors.deadletterqueue.copy.record.enable")} == {
        "streams.assignor.name": "sticky", "errors.deadletterqueue.topic.name": "",
        "errors.deadletterqueue.copy.record.enable": "false"}  # Kafka 4.4's additions
    assert _set(admin, ResourceType.GROUP, group, **{"consumer.session.timeout.ms": "46000"}) == ("NO_ERROR", "")
    entry = _described(admin, ResourceType.GROUP, group, "consumer.session.timeout.ms", "46000")
    assert entry.source == ConfigSource.GROUP_CONFIG.value
    assert [(s.name, s.value) for s in entry.synonyms.values()][0] == ("consumer.session.timeout.ms", "46000")
    refusals = {
        "consumer.session.timeout.ms=99000": _refusal(admin, ResourceType.GROUP, group,
                                                      **{"consumer.session.timeout.ms": "99000"}),
        "consumer.session.timeout.ms=abc": _refusal(admin, ResourceType.GROUP, group,
                                                    **{"consumer.session.timeout.ms": "abc"}),
        "share.delivery.count.limit=1": _refusal(admin, ResourceType.GROUP, group,
                                                 **{"share.delivery.count.limit": "1"}),
        "streams.num.standby.replicas=5": _refusal(admin, ResourceType.GROUP, group,
                                                   **{"streams.num.standby.replicas": "5"}),
        "streams.assignor.name=nobody": _refusal(admin, ResourceType.GROUP, group,
                                                 **{"streams.assignor.name": "nobody"}),
        "errors.deadletterqueue.topic.name=__x": _refusal(admin, ResourceType.GROUP, group,
                                                          **{"errors.deadletterqueue.topic.name": "__x"}),
        "heartbeat above session": _refusal(admin, ResourceType.GROUP, group, **{
            "consumer.heartbeat.interval.ms": "15000", "consumer.session.timeout.ms": "15000"}),
    }
    assert refusals == dict.fromkeys(refusals, "INVALID_CONFIG")


#: Kafka 4.4's topic configs that Weir stores and describes without acting on them
INERT_TOPIC_CONFIGS = {"remote.copy.lag.bytes": "1024", "remote.copy.lag.ms": "60000",
                       "errors.deadletterqueue.group.enable": "true", "file.delete.delay.ms": "1000",
                       "preallocate": "true", "local.retention.ms": "5",
                       "local.retention.bytes": "100", "segment.jitter.ms": "10", "remote.storage.enable": "false",
                       "remote.log.copy.disable": "false", "remote.log.delete.on.disable": "false",
                       "leader.replication.throttled.replicas": "0:1",
                       "follower.replication.throttled.replicas": "*"}


def test_every_kafka_topic_config_is_accepted_stored_and_described(any_broker):
    admin, topic = AdminClient({"bootstrap.servers": any_broker.bootstrap}), unique("all-configs")
    create_topics(any_broker.bootstrap, NewTopic(topic, 1, config=INERT_TOPIC_CONFIGS))
    described = _describe(admin, ResourceType.TOPIC, topic)
    assert {name: described[name].value for name in INERT_TOPIC_CONFIGS} == INERT_TOPIC_CONFIGS
    assert {described[name].source for name in INERT_TOPIC_CONFIGS} == {ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
    entry = described["file.delete.delay.ms"]
    assert [(s.name, s.value) for s in entry.synonyms.values()] == [
        ("file.delete.delay.ms", "1000"), ("log.segment.delete.delay.ms", "60000")]
    assert _set(admin, ResourceType.TOPIC, topic, **{"file.delete.delay.ms": "2000"}) == ("NO_ERROR", "")
    _described(admin, ResourceType.TOPIC, topic, "file.delete.delay.ms", "2000")
    assert _refusal(admin, ResourceType.TOPIC, topic, **{"segment.jitter.ms": "-1"}) == "INVALID_CONFIG"
    assert _refusal(admin, ResourceType.TOPIC, topic,
                    **{"leader.replication.throttled.replicas": "abc"}) == "INVALID_CONFIG"


def test_kafkas_dynamic_broker_settings_are_accepted(any_broker):
    admin = AdminClient({"bootstrap.servers": any_broker.bootstrap})
    changes = {"sasl.kerberos.min.time.before.relogin": "58000", "log.segment.delete.delay.ms": "1000",
               "background.threads": "5", "log.cleaner.threads": "2"}
    try:
        assert _set(admin, ResourceType.BROKER, "1", **changes) == ("NO_ERROR", "")
        _described(admin, ResourceType.BROKER, "1", "log.cleaner.threads", "2")
        described = _describe(admin, ResourceType.BROKER, "1")
        assert {name: (described[name].value, described[name].source) for name in changes} == {
            name: (value, ConfigSource.DYNAMIC_BROKER_CONFIG.value) for name, value in changes.items()}
        assert _refusal(admin, ResourceType.BROKER, "1", **{"num.io.threads": "0"}) == "INVALID_REQUEST"
        error, message = _set(admin, ResourceType.BROKER, "1", **{"ssl.keystore.location": "/nowhere"})
        assert (error, message) == ("INVALID_REQUEST", "These security configs can be dynamically updated only "
                                    "per-listener using the listener prefix: [ssl.keystore.location]")
    finally:
        resource = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
            ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE) for name in changes])
        admin.incremental_alter_configs([resource])[resource].result(30)
