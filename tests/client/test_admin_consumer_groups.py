"""``weir-admin groups describe --members --verbose`` on a consumer-protocol group (KIP-848) of our
consumers, one of them a classic member (so the Upgraded column shows), on Weir and on Kafka 4.4.0:
the same rows as ``kafka-consumer-groups --describe --members --verbose`` prints for the group
(member epochs, current and target assignments, the group's target assignment epoch), and the
assignments our consumers hold."""

from __future__ import annotations

import asyncio

from tests.support.admin_cli import cli, cli_json
from tests.support.consumer_groups import PARTITIONS, Group
from tests.support.topics import create_topic
from tests.support.waiting import wait_until_async
from tests.tools.tools import GROUPS, run_tool, table

COLUMNS = ["CONSUMER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT",
           "TARGET-EPOCH", "TARGET-ASSIGNMENT", "UPGRADED"]


def rows_by_member(stdout: str) -> dict[str, dict[str, str]]:
    rows = [{name.upper(): value for name, value in row.items()} for row in table(stdout)]
    return {row["CONSUMER-ID"]: {column: row.get(column, "") for column in COLUMNS} for row in rows}


async def test_members_with_epochs_and_assignments_as_kafka_consumer_groups_shows_them(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    group_id = f"{topic_name}-g"
    group = Group(any_broker.bootstrap, topic_name, group_id)
    try:
        await group.add("a", group_instance_id="instance-a")
        await group.add("b")
        # the classic member joins a consumer group already there, the upgrade path: a first heartbeat
        # reaching a classic group whose member is still joining fails on Kafka 4.4.0 with
        # UNKNOWN_SERVER_ERROR (NoSuchElementException in ConsumerGroup.fromClassicGroup)
        await wait_until_async(group.balanced(["a", "b"]), "6 partitions each", 60)
        await group.add("classic", group_protocol="classic", heartbeat_interval_ms=200,
                        partition_assignment_strategy=["cooperative-sticky"])
        await wait_until_async(group.balanced(["a", "b", "classic"]), "4 partitions each", 60)
        ours = (await asyncio.to_thread(cli, any_broker.bootstrap, "groups", "describe", group_id, "--members",
                                        "--verbose")).stdout
        kafka_tool = await asyncio.to_thread(run_tool, GROUPS, "--bootstrap-server", any_broker.bootstrap,
                                             "--describe", "--group", group_id, "--members", "--verbose")
        described = await asyncio.to_thread(cli_json, any_broker.bootstrap, "groups", "describe", group_id,
                                            "--members")
        [offsets] = await asyncio.to_thread(cli_json, any_broker.bootstrap, "groups", "describe", group_id)
        held = {name: consumer.assignment() for name, consumer in group.consumers.items()}
        epochs = {name: consumer.group.member_epoch for name, consumer in group.consumers.items()  # type: ignore
                  if name != "classic"}
    finally:
        await group.close()
    assert kafka_tool.returncode == 0, kafka_tool.stderr[-2000:]
    assert rows_by_member(ours) == rows_by_member(kafka_tool.stdout)
    [description] = described
    assert (description["group_type"], description["state"], description["protocol"]) == (
        "consumer", "Stable", "uniform")
    by_client = {m["client_id"]: m for m in description["members"]}
    assert set(by_client) == {"a", "b", "classic"}
    for name, member in by_client.items():
        assert {(tp["topic"], tp["partition"]) for tp in member["assignment"]} == set(held[name])
        assert member["assignment"] == member["target_assignment"]
        assert member["upgraded"] is (name != "classic")
        if name in epochs:
            assert member["member_epoch"] == epochs[name]
    assert by_client["a"]["group_instance_id"] == "instance-a"
    owner = {(tp["topic"], tp["partition"]): m["member_id"] for m in description["members"] for tp in m["assignment"]}
    assert {(o["topic"], o["partition"]): o["member_id"] for o in offsets["offsets"]} == owner  # the lag view too
    assert description["target_assignment_epoch"] <= description["group_epoch"]
