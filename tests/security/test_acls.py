"""Kafka's ACL authorizer on Weir, through clients nobody here wrote: kafka-acls (Kafka 4.4.0's
AclCommand) adds, lists and removes ACLs; confluent-kafka, as a SASL user, sees each API's
authorization error and then succeeds once the ACL exists, and so does the Java client
(Kafka's perf tools); ``weir-admin acls`` does what
kafka-acls does; ACLs survive a restart; denials are logged as kafka.authorizer.logger logs them.
One broker serves the module (PLAINTEXT: the super user ANONYMOUS; SASL_PLAINTEXT: alice)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import REPO
from tests.security.acl_wire import acl_settings
from tests.security.brokers import ConfiguredBroker, listeners_setting
from tests.security.sasl_setup import confluent_config, java_client_properties
from tests.support.topics import create_topic
from tests.tools.tools import CONSUMER_PERF, PRODUCER_PERF, run_tool

ACLS_TOOL = "org.apache.kafka.tools.AclCommand"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    broker = ConfiguredBroker(tmp_path_factory.mktemp("weir-acls"), {**settings, **acl_settings()}, ports).start()
    yield broker
    broker.stop()


def acls(broker, *args: str) -> subprocess.CompletedProcess:
    result = run_tool(ACLS_TOOL, "--bootstrap-server", broker.bootstrap_for("PLAINTEXT"), *args)
    assert result.returncode == 0, result.stdout[:3000] + result.stderr[-3000:]
    return result


def alice(broker, **extra) -> dict:
    # log_level 0: clients left for the garbage collector would log the module's broker stopping
    return confluent_config(broker.bootstrap_for("SASL_PLAINTEXT"), "SASL_PLAINTEXT", "PLAIN", "alice",
                            "alice-secret", **{"log_level": 0, **extra})


def produce_error(broker, topic: str, **extra) -> KafkaError | None:
    """The delivery error of one record alice produces (None when written)."""
    outcome = []
    producer = Producer(alice(broker, **{"message.timeout.ms": 10000, **extra}))
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(15)
    return outcome[0]


def test_kafka_acls_tool_adds_lists_and_removes_acls(broker):
    acls(broker, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe",
         "--topic", "tool-orders")
    acls(broker, "--add", "--deny-principal", "User:mallory", "--operation", "All", "--topic", "tool-",
         "--resource-pattern-type", "prefixed")
    acls(broker, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "tool-group",
         "--allow-host", "127.0.0.1")
    listed = acls(broker, "--list", "--topic", "tool-orders").stdout
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in listed
    assert "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)" in listed
    assert "User:mallory" not in listed  # --list names one LITERAL pattern unless told otherwise
    matching = acls(broker, "--list", "--topic", "tool-orders", "--resource-pattern-type", "match").stdout
    assert "resourceType=TOPIC, name=tool-, patternType=PREFIXED" in matching and "User:mallory" in matching
    by_principal = acls(broker, "--list", "--principal", "User:alice").stdout
    assert "name=tool-group" in by_principal and "host=127.0.0.1" in by_principal
    acls(broker, "--remove", "--force", "--topic", "tool-orders")
    assert "User:alice" not in acls(broker, "--list", "--topic", "tool-orders").stdout
    assert "User:mallory" in acls(broker, "--list", "--resource-pattern-type", "any").stdout


def test_confluent_client_sees_authorization_errors_until_acls_allow(broker):
    create_topic(broker.bootstrap_for("PLAINTEXT"), "cf-orders")
    # librdkafka asks Metadata first: refused DESCRIBE, the topic's error is the authorization one
    assert produce_error(broker, "cf-orders").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert broker.wait_for_log("Principal = User:alice is Denied operation = DESCRIBE from host = 127.0.0.1 on "
                               "resource = Topic:LITERAL:cf-orders for request = METADATA with resourceRefCount = 1 "
                               "based on rule DefaultDeny")
    acls(broker, "--add", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", "cf-orders")
    assert produce_error(broker, "cf-orders", **{"enable.idempotence": False}).code() \
        == KafkaError.TOPIC_AUTHORIZATION_FAILED  # now Produce itself: WRITE refused
    assert broker.wait_for_log("Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on "
                               "resource = Topic:LITERAL:cf-orders for request = PRODUCE")
    acls(broker, "--add", "--allow-principal", "User:alice", "--producer", "--topic", "cf-orders")
    assert produce_error(broker, "cf-orders") is None  # idempotent: WRITE on a topic is enough in Kafka 4

    # a topic is auto-created only for a principal that may CREATE it: librdkafka's Metadata is refused
    # (TOPIC_AUTHORIZATION_FAILED, as Kafka refuses it) and a Produce naming it is UNKNOWN_TOPIC_OR_PARTITION
    acls(broker, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "cf-auto",
         "--resource-pattern-type", "prefixed")
    assert produce_error(broker, "cf-auto-1", **{"enable.idempotence": False, "message.timeout.ms": 3000}).code() \
        in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.UNKNOWN_TOPIC_OR_PART)
    assert "cf-auto-1" not in AdminClient({"bootstrap.servers": broker.bootstrap_for("PLAINTEXT")}).list_topics(
        timeout=10).topics

    consumer = Consumer(alice(broker, **{"group.id": "cf-group", "auto.offset.reset": "earliest"}))
    consumer.subscribe(["cf-orders"])
    try:
        message = consumer.poll(15)
        assert message is not None and message.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()

    admin = AdminClient(alice(broker))
    created = admin.create_topics([NewTopic("cf-new", 1, 1)])["cf-new"]
    with pytest.raises(KafkaException) as refused:
        created.result(15)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    visible = admin.list_topics(timeout=10).topics
    assert "cf-orders" in visible and "cf-new" not in visible

    transactional = Producer(alice(broker, **{"transactional.id": "cf-tx"}))
    with pytest.raises(KafkaException) as refused:
        transactional.init_transactions(15)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def cli(broker, *args: str):
    result = subprocess.run([sys.executable, "-m", "weir.client.cli", "--bootstrap-server",
                             broker.bootstrap_for("PLAINTEXT"), "--json", "acls", *args], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_weir_admin_acls_and_acls_surviving_a_restart(broker):
    added = cli(broker, "add", "--allow-principal", "User:alice", "--operation", "read", "--operation", "describe",
                "--topic", "admin-", "--resource-pattern-type", "prefixed")
    assert {(a["operation"], a["pattern_type"]) for a in added} == {("read", "prefixed"), ("describe", "prefixed")}
    listed = cli(broker, "list", "--topic", "admin-x", "--resource-pattern-type", "match")
    assert {(a["resource_name"], a["principal"], a["operation"]) for a in listed} == {
        ("admin-", "User:alice", "read"), ("admin-", "User:alice", "describe")}

    broker.stop()
    broker.start()
    after = cli(broker, "list", "--principal", "User:alice")
    assert {(a["resource_name"], a["operation"]) for a in after} >= {("admin-", "read"), ("admin-", "describe")}
    removed = cli(broker, "remove", "--topic", "admin-", "--resource-pattern-type", "prefixed",
                  "--operation", "read")
    assert [(a["resource_name"], a["operation"]) for a in removed] == [("admin-", "read")]
    assert {a["operation"] for a in cli(broker, "list", "--topic", "admin-", "--resource-pattern-type", "prefixed")} \
        == {"describe"}


def test_java_client_sees_authorization_errors_until_acls_allow(broker, tmp_path):
    create_topic(broker.bootstrap_for("PLAINTEXT"), "java-orders")
    properties = tmp_path / "alice.properties"
    properties.write_text(java_client_properties("SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret"))
    sasl = broker.bootstrap_for("SASL_PLAINTEXT")
    produce = ("--bootstrap-server", sasl, "--topic", "java-orders", "--record-size", "10", "--throughput", "-1",
               "--command-config", str(properties), "--producer-props", "max.block.ms=3000")
    refused = run_tool(PRODUCER_PERF, *produce, "--num-records", "1")  # one: each refused record waits max.block.ms
    assert "TopicAuthorizationException: Not authorized to access topics: [java-orders]" in \
        refused.stdout + refused.stderr
    acls(broker, "--add", "--allow-principal", "User:alice", "--producer", "--topic", "java-orders")
    produced = run_tool(PRODUCER_PERF, *produce, "--num-records", "100")
    assert produced.returncode == 0 and "100 records sent" in produced.stdout, produced.stderr[-3000:]

    consume = ("--bootstrap-server", sasl, "--topic", "java-orders", "--num-records", "100", "--group", "java-group",
               "--timeout", "10000", "--command-config", str(properties))
    acls(broker, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "java-orders")
    refused = run_tool(CONSUMER_PERF, *consume)
    assert "GroupAuthorizationException: Not authorized to access group: java-group" in \
        refused.stdout + refused.stderr
    acls(broker, "--add", "--allow-principal", "User:alice", "--consumer", "--topic", "java-orders",
         "--group", "java-group")
    consumed = run_tool(CONSUMER_PERF, *consume)
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    header, values = [line.split(", ") for line in consumed.stdout.strip().splitlines()[-2:]]
    assert dict(zip(header, values, strict=True))["data.consumed.in.nMsg"] == "100"
