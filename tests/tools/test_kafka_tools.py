"""Kafka's own command-line tools (kafka-topics, kafka-configs, kafka-consumer-groups,
kafka-transactions, kafka-producer-perf-test, kafka-consumer-perf-test), run unmodified against
each broker: exit status and the parsed output must say the same on Weir as on Apache Kafka.

Differences that are deliberate, and how the assertions allow for them:
- MIN_ISR_DEFAULT: a new Kafka 4 KRaft cluster has eligible leader replicas on, for which its
  controller sets a cluster-wide ``min.insync.replicas=1``; kafka-topics --describe then lists it
  among each topic's non-default configs and kafka-configs among the brokers' defaults. Weir has
  one node and no replication, so no ELR and no such record.
- Weir accepts every dynamic broker setting Kafka 4.3 has, many without acting on them
  (broker/inert_settings.py); the broker-config test uses settings both brokers act on.
"""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.tools.tools import (CONFIGS, CONSUMER_PERF, GROUPS, PRODUCER_PERF, TOPICS, TRANSACTIONS, create_topics,
                               run_tool, table)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr[-3000:]}"
    return result.stdout


def topic_configs(describe_stdout: str) -> dict[str, str]:
    first = describe_stdout.splitlines()[0]
    listed = first.split("Configs:")[1].strip()
    configs = dict(item.split("=", 1) for item in listed.split(",") if item)
    configs.pop("min.insync.replicas", None)  # MIN_ISR_DEFAULT (Kafka only)
    return configs


def partition_lines(describe_stdout: str) -> list[dict[str, str]]:
    rows = []
    for line in describe_stdout.splitlines()[1:]:
        fields = [f.strip() for f in line.strip().split("\t")]
        rows.append(dict(f.split(": ", 1) if ": " in f else (f.rstrip(":"), "") for f in fields))
    return rows


def test_kafka_topics(any_broker):
    bootstrap, topic = any_broker.bootstrap, unique("tool-topic")
    tool = lambda *args: run_tool(TOPICS, "--bootstrap-server", bootstrap, *args)  # noqa: E731
    assert ok(tool("--create", "--topic", topic, "--partitions", "3", "--config", "retention.ms=12345",
                   "--config", "cleanup.policy=compact")).strip() == f"Created topic {topic}."
    assert topic in ok(tool("--list")).split()
    described = ok(tool("--describe", "--topic", topic))
    assert f"Topic: {topic}\t" in described and "PartitionCount: 3\tReplicationFactor: 1" in described
    assert topic_configs(described) == {"cleanup.policy": "compact", "retention.ms": "12345"}
    rows = partition_lines(described)
    assert [(r["Partition"], r["Leader"], r["Replicas"], r["Isr"], r["Elr"], r["LastKnownElr"]) for r in rows] == [
        (str(p), "1", "1", "1", "", "") for p in range(3)]
    # creating it again is refused, with Kafka's message
    again = tool("--create", "--topic", topic, "--partitions", "1")
    assert again.returncode == 1 and f"Topic '{topic}' already exists." in again.stdout + again.stderr
    ok(tool("--alter", "--topic", topic, "--partitions", "5"))
    assert len(partition_lines(ok(tool("--describe", "--topic", topic)))) == 5
    fewer = tool("--alter", "--topic", topic, "--partitions", "2")
    assert fewer.returncode == 1 and f"The topic {topic} currently has 5 partition(s); 2 would not be an increase." in \
        fewer.stdout + fewer.stderr
    ok(tool("--delete", "--topic", topic))
    assert topic not in ok(tool("--list")).split()
    missing = tool("--describe", "--topic", topic)
    assert missing.returncode == 1 and f"Topic '{topic}' does not exist as expected" in missing.stdout + missing.stderr


def dynamic_configs(stdout: str) -> dict[str, str]:
    """name -> value from kafka-configs --describe (lines "  name=value sensitive=... synonyms={...}")."""
    found = {}
    for line in stdout.splitlines():
        if line.startswith("  "):
            name, rest = line.strip().split("=", 1)
            found[name] = rest.split(" sensitive=")[0]
    return found


def test_kafka_configs_topic(any_broker):
    bootstrap, topic = any_broker.bootstrap, unique("tool-configs")
    ok(run_tool(TOPICS, "--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "1"))
    tool = lambda *args: run_tool(CONFIGS, "--bootstrap-server", bootstrap, "--entity-type", "topics",  # noqa: E731
                                  "--entity-name", topic, *args)
    assert ok(tool("--alter", "--add-config", "retention.ms=1000,max.message.bytes=2000")).strip() == \
        f"Completed updating config for topic {topic}."
    described = ok(tool("--describe"))
    assert described.splitlines()[0] == f"Dynamic configs for topic {topic} are:"
    assert dynamic_configs(described) == {"retention.ms": "1000", "max.message.bytes": "2000"}
    assert ("max.message.bytes=2000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:max.message.bytes=2000, "
            "DEFAULT_CONFIG:message.max.bytes=1048588}") in described
    ok(tool("--alter", "--delete-config", "retention.ms"))
    assert dynamic_configs(ok(tool("--describe"))) == {"max.message.bytes": "2000"}
    everything = dynamic_configs(ok(tool("--describe", "--all")))
    assert everything["retention.ms"] == "604800000" and everything["cleanup.policy"] == "delete"
    bad = tool("--alter", "--add-config", "retention.ms=soon")
    assert bad.returncode == 1 and "InvalidConfigurationException" in bad.stdout + bad.stderr


def test_kafka_configs_broker(any_broker):
    bootstrap = any_broker.bootstrap
    node = lambda *args: run_tool(CONFIGS, "--bootstrap-server", bootstrap, "--entity-type", "brokers",  # noqa: E731
                                  "--entity-name", "1", *args)
    default = lambda *args: run_tool(CONFIGS, "--bootstrap-server", bootstrap, "--entity-type",  # noqa: E731
                                     "brokers", "--entity-default", *args)
    try:
        assert ok(node("--alter", "--add-config", "log.retention.bytes=123456789")).strip() == \
            "Completed updating config for broker 1."
        assert ok(default("--alter", "--add-config", "log.retention.ms=99999")).strip() == \
            "Completed updating default config for brokers in the cluster."
        mine = ok(node("--describe"))
        assert dynamic_configs(mine) == {"log.retention.bytes": "123456789"}
        assert "synonyms={DYNAMIC_BROKER_CONFIG:log.retention.bytes=123456789, DEFAULT_CONFIG:log.retention.bytes=-1}" \
            in mine
        defaults = dynamic_configs(ok(default("--describe")))
        defaults.pop("min.insync.replicas", None)  # MIN_ISR_DEFAULT (Kafka only)
        assert defaults == {"log.retention.ms": "99999"}
    finally:
        ok(node("--alter", "--delete-config", "log.retention.bytes"))
        ok(default("--alter", "--delete-config", "log.retention.ms"))
    assert dynamic_configs(ok(node("--describe"))) == {}
    refused = node("--alter", "--add-config", "node.id=7")
    assert refused.returncode == 1 and "Cannot update these configs dynamically: [node.id]" in \
        refused.stdout + refused.stderr


def produce(bootstrap: str, topic: str, per_partition: list[int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, count in enumerate(per_partition):
        for i in range(count):
            producer.produce(topic, value=b"%d" % i, partition=partition)
    assert producer.flush(30) == 0


def commit_offsets(bootstrap: str, group: str, topic: str, offsets: list[int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in enumerate(offsets)], asynchronous=False)
    consumer.close()


def group_offsets(stdout: str) -> dict[int, tuple[str, str, str]]:
    """partition -> (current offset, log end offset, lag) from kafka-consumer-groups --describe."""
    return {int(row["PARTITION"]): (row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"])
            for row in table(stdout)}


def test_kafka_consumer_groups(any_broker):
    bootstrap, topic, group = any_broker.bootstrap, unique("tool-groups"), unique("tool-group")
    create_topics(bootstrap, NewTopic(topic, 2))
    produce(bootstrap, topic, [10, 6])
    commit_offsets(bootstrap, group, topic, [4, 6])
    tool = lambda *args: run_tool(GROUPS, "--bootstrap-server", bootstrap, *args)  # noqa: E731

    assert group in ok(tool("--list")).split()
    states = {row["GROUP"]: row["STATE"] for row in table(ok(tool("--list", "--state")))}
    assert states[group] == "Empty"
    described = tool("--describe", "--group", group)
    assert f"Consumer group '{group}' has no active members." in described.stdout + described.stderr
    assert group_offsets(ok(described)) == {0: ("4", "10", "6"), 1: ("6", "6", "0")}
    state = table(ok(tool("--describe", "--group", group, "--state")))
    assert [(r["GROUP"], r["ASSIGNMENT-STRATEGY"], r["STATE"], r["#MEMBERS"]) for r in state] == [
        (group, "-", "Empty", "0")]

    def reset(*how: str) -> dict[int, str]:
        rows = table(ok(tool("--reset-offsets", "--group", group, *how, "--execute")))
        return {int(r["PARTITION"]): r["NEW-OFFSET"] for r in rows}

    assert reset("--topic", topic, "--to-earliest") == {0: "0", 1: "0"}
    assert reset("--topic", f"{topic}:0", "--to-offset", "7") == {0: "7"}
    assert reset("--topic", topic, "--shift-by", "2") == {0: "9", 1: "2"}
    assert reset("--topic", topic, "--shift-by", "5") == {0: "10", 1: "6"}  # clamped to the log end
    assert group_offsets(ok(tool("--describe", "--group", group))) == {0: ("10", "10", "0"), 1: ("6", "6", "0")}

    deleted = ok(tool("--delete-offsets", "--group", group, "--topic", f"{topic}:1"))
    assert f"Request succeeded for deleting offsets from group {group}." in deleted
    assert [(r["TOPIC"], r["PARTITION"], r["STATUS"]) for r in table(deleted.split("\n", 1)[1])] == [
        (topic, "1", "Successful")]
    assert group_offsets(ok(tool("--describe", "--group", group))) == {0: ("10", "10", "0")}

    deleted = ok(tool("--delete", "--group", group))
    assert f"Deletion of requested consumer groups ('{group}') was successful." in deleted
    assert group not in ok(tool("--list")).split()
    missing = tool("--describe", "--group", group)
    assert f"GroupIdNotFoundException: Group {group} not found." in missing.stdout + missing.stderr
    again = ok(tool("--delete", "--group", group))
    assert f"Group '{group}' could not be deleted due to: org.apache.kafka.common.errors.GroupIdNotFoundException" \
        in again


def producers(stdout: str) -> dict[str, dict[str, str]]:
    return {row["ProducerId"]: row for row in table(stdout)}


def test_kafka_transactions(any_broker):
    bootstrap, topic, txn = any_broker.bootstrap, unique("tool-txn"), unique("tool-txn-id")
    create_topics(bootstrap, NewTopic(topic, 1))
    tool = lambda *args: run_tool(TRANSACTIONS, "--bootstrap-server", bootstrap, *args)  # noqa: E731
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn, "transaction.timeout.ms": 600000})
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    try:
        listed = {row["TransactionalId"]: row for row in table(ok(tool("list")))}
        assert (listed[txn]["Coordinator"], listed[txn]["TransactionState"]) == ("1", "Ongoing")
        producer_id = listed[txn]["ProducerId"]
        described = table(ok(tool("describe", "--transactional-id", txn)))[0]
        assert (described["TransactionalId"], described["ProducerId"], described["TransactionState"],
                described["TransactionTimeoutMs"], described["TopicPartitions"]) == (
            txn, producer_id, "Ongoing", "600000", f"{topic}-0")
        open_one = producers(ok(tool("describe-producers", "--topic", topic, "--partition", "0")))[producer_id]
        assert (open_one["ProducerEpoch"], open_one["LatestCoordinatorEpoch"], open_one["LastSequence"],
                open_one["CurrentTransactionStartOffset"]) == ("0", "-1", "4", "0")
        # The coordinator knows the partition is in the open transaction: nothing hangs, even with
        # no age limit.
        hanging = ok(tool("find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0"))
        assert table(hanging) == []
        # An operator aborts the open transaction on the partition from its start offset: the tool
        # finds the producer with DescribeProducers and sends WriteTxnMarkers(abort).
        assert ok(tool("abort", "--topic", topic, "--partition", "0", "--start-offset", "0")) == ""
        closed = producers(ok(tool("describe-producers", "--topic", topic, "--partition", "0")))[producer_id]
        assert (closed["LatestCoordinatorEpoch"], closed["CurrentTransactionStartOffset"]) == ("0", "None")
        nothing = tool("abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
        assert nothing.returncode == 1 and f"Could not find any open transactions starting at offset 0 on partition " \
            f"{topic}-0" in nothing.stdout + nothing.stderr
    finally:
        producer.abort_transaction()
    missing = tool("describe", "--transactional-id", unique("no-such-txn"))
    assert missing.returncode == 1 and "failed because the ID could not be found" in missing.stdout + missing.stderr


def perf_summary(stdout: str) -> str:
    return [line for line in stdout.splitlines() if " records sent, " in line][-1]


def test_kafka_producer_and_consumer_perf(any_broker):
    bootstrap, topic = any_broker.bootstrap, unique("tool-perf")
    create_topics(bootstrap, NewTopic(topic, 2))
    perf = lambda *args: run_tool(PRODUCER_PERF, "--bootstrap-server", bootstrap, "--topic", topic,  # noqa: E731
                                  "--record-size", "100", "--throughput", "-1", *args)
    assert perf_summary(ok(perf("--num-records", "2000", "--command-property", "acks=all",
                                "enable.idempotence=false"))).startswith("2000 records sent, ")
    assert perf_summary(ok(perf("--num-records", "1000", "--command-property",
                                "enable.idempotence=true"))).startswith("1000 records sent, ")
    assert perf_summary(ok(perf("--num-records", "2000", "--transactional-id", unique("perf-txn"),
                                "--transaction-duration-ms", "200"))).startswith("2000 records sent, ")

    group = unique("perf-group")
    consumed = ok(run_tool(CONSUMER_PERF, "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", "5000",
                           "--group", group, "--timeout", "30000"))
    header, values = [line.split(", ") for line in consumed.strip().splitlines()[-2:]]
    row = dict(zip(header, values, strict=False))
    assert row["data.consumed.in.nMsg"] == "5000"
    # the transactional run committed, so a read_committed reader sees all of it too
    committed = ok(run_tool(CONSUMER_PERF, "--bootstrap-server", bootstrap, "--topic", topic, "--num-records",
                            "5000", "--group", unique("perf-group"), "--timeout", "30000", "--command-property",
                            "isolation.level=read_committed"))
    header, values = [line.split(", ") for line in committed.strip().splitlines()[-2:]]
    assert dict(zip(header, values, strict=False))["data.consumed.in.nMsg"] == "5000"
