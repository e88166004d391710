"""kafka-consumer-groups on a consumer-protocol group (KIP-848) of two confluent-kafka members, on
Weir and on Kafka 4.4.0: ``--list --type`` (ListGroups v5), ``--describe --state`` and
``--describe --members --verbose`` (ConsumerGroupDescribe: member epochs, current and target
assignments) answer alike on both."""

from __future__ import annotations

import uuid

from confluent_kafka.admin import NewTopic

from tests.reference.test_consumer_protocol_confluent import PARTITIONS, Member, consumed, produce, wait_until
from tests.tools.tools import GROUPS, create_topics, run_tool, table


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr[-3000:]}"
    return result.stdout


def test_consumer_groups_tool_on_a_consumer_protocol_group(any_broker):
    bootstrap = any_broker.bootstrap
    topic, group = f"kip848-tool-{uuid.uuid4().hex[:8]}", f"kip848-tool-group-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, NewTopic(topic, PARTITIONS))
    expected = produce(bootstrap, topic, "v", 60)
    tool = lambda *args: run_tool(GROUPS, "--bootstrap-server", bootstrap, *args)  # noqa: E731
    members = [Member(bootstrap, topic, group, name) for name in ("a", "b")]
    for member in members:
        member.start()
    try:
        wait_until(lambda: set(expected) <= set(consumed(members)) and all(m.owned for m in members), 60,
                   "both members to own partitions and consume")

        def stable():
            rows = table(ok(tool("--describe", "--group", group, "--state")))
            return rows and rows[0]["STATE"] == "Stable"
        wait_until(stable, 60, "a Stable group")
        state = table(ok(tool("--describe", "--group", group, "--state")))
        assert [(r["GROUP"], r["ASSIGNMENT-STRATEGY"], r["STATE"], r["#MEMBERS"]) for r in state] == [
            (group, "uniform", "Stable", "2")]

        listed = {r["GROUP"]: r["TYPE"] for r in table(ok(tool("--list", "--type")))}
        assert listed[group] == "Consumer"
        assert group in ok(tool("--list", "--type", "consumer")).split()
        assert group not in ok(tool("--list", "--type", "classic")).split()

        rows = table(ok(tool("--describe", "--group", group, "--members", "--verbose")))
        assert len(rows) == 2
        assert {r["CLIENT-ID"] for r in rows} == {"a", "b"}
        assert sorted(int(r["#PARTITIONS"]) for r in rows) == [3, 3]
        for row in rows:
            assert row["CURRENT-EPOCH"] == row["TARGET-EPOCH"] != "-"
            assert row["CURRENT-ASSIGNMENT"] == row["TARGET-ASSIGNMENT"] and topic in row["CURRENT-ASSIGNMENT"]
    finally:
        for member in members:
            if member.is_alive():
                member.stop()
    # both left: the group is Empty and may be deleted, offsets and all
    wait_until(lambda: table(ok(tool("--describe", "--group", group, "--state")))[0]["STATE"] == "Empty", 30,
               "an Empty group")
    assert f"Deletion of requested consumer groups ('{group}') was successful." in ok(tool("--delete", "--group",
                                                                                          group))
    assert group not in ok(tool("--list")).split()
