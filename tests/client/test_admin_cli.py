"""``weir-admin`` run as a subprocess against the real broker: every command group, as tables and as JSON."""

import asyncio
import subprocess
import tomllib

import pytest

from weir.client import Admin
from weir.client.cli import main
from tests.broker_process import REPO
from tests.support.admin_cli import cli, cli_json
from tests.client.test_admin_transactions import TXN_ID, lose_transaction_coordinator_state, open_transaction
from tests.client.test_admin_groups import join
from tests.client.test_admin_transactions import produce_plain, read_committed


def table(result: subprocess.CompletedProcess) -> list[list[str]]:
    return [line.split() for line in result.stdout.splitlines()]


def test_the_weir_admin_script_is_the_cli():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["weir-admin"] == "weir.client.cli:main"
    assert main.__module__ == "weir.client.cli"


def test_topics_commands(shared_broker, topic_name):
    b = shared_broker.bootstrap
    assert table(cli(b, "topics", "create", topic_name, "--partitions", "2", "--config", "retention.ms=100000")) == [
        ["Topic", "Result"], [topic_name, "created"]]
    failed = cli(b, "topics", "create", topic_name, expect=1)
    assert "TOPIC_ALREADY_EXISTS" in failed.stderr and failed.stdout == ""
    assert "INVALID_CONFIG" in cli(b, "topics", "create", topic_name + "-x", "--config", "retention.ms=x",
                                   expect=1).stderr
    assert [topic_name] in table(cli(b, "topics", "list"))
    assert topic_name in cli_json(b, "topics", "list")

    assert table(cli(b, "topics", "describe", topic_name)) == [
        ["Topic", "Partition", "Leader", "Replicas", "Isr", "Configs"],
        [topic_name, "0", "0", "0", "0", "retention.ms=100000"],
        [topic_name, "1", "0", "0", "0"]]
    [described] = cli_json(b, "topics", "describe", topic_name)
    assert described["configs"] == {"retention.ms": "100000"}
    assert [(p["partition"], p["leader"], p["isr"]) for p in described["topic"]["partitions"]] == [
        (0, 0, [0]), (1, 0, [0])]

    assert table(cli(b, "topics", "alter-config", topic_name, "--set", "cleanup.policy=compact",
                     "--delete", "retention.ms")) == [
        ["Config", "Value", "Source"], ["cleanup.policy", "compact", "DYNAMIC_TOPIC_CONFIG"],
        ["retention.ms", "604800000", "DEFAULT_CONFIG"]]
    altered = cli_json(b, "topics", "alter-config", topic_name, "--append", "cleanup.policy=delete")
    assert (altered["cleanup.policy"]["value"], altered["cleanup.policy"]["source"]) == (
        "compact,delete", "DYNAMIC_TOPIC_CONFIG")
    assert "INVALID_CONFIG" in cli(b, "topics", "alter-config", topic_name, "--set", "retention.ms=x",
                                   expect=1).stderr
    assert "needs at least one" in cli(b, "topics", "alter-config", topic_name, expect=2).stderr

    assert cli_json(b, "topics", "add-partitions", topic_name, "--total", "3") == {"topic": topic_name,
                                                                                   "partitions": 3}
    assert "INVALID_PARTITIONS" in cli(b, "topics", "add-partitions", topic_name, "--total", "2", expect=1).stderr
    assert cli_json(b, "topics", "delete", topic_name) == {"deleted": [topic_name]}
    assert "UNKNOWN_TOPIC_OR_PARTITION" in cli(b, "topics", "delete", topic_name, expect=1).stderr


def test_groups_commands(shared_broker, topic_name):
    b, group = shared_broker.bootstrap, f"{topic_name}-g"
    cli(b, "topics", "create", topic_name, "--partitions", "2")
    for _ in range(4):
        produce_plain(b, topic_name, b"x")  # partition 0 ends at offset 4

    dry = cli(b, "groups", "reset-offsets", group, "--topic", topic_name, "--to-latest")
    assert table(dry) == [["Group", "Topic", "Partition", "New-Offset"], [group, topic_name, "0", "4"],
                          [group, topic_name, "1", "0"]]
    assert "dry run" in dry.stderr
    assert [group] not in [row[:1] for row in table(cli(b, "groups", "list"))]

    applied = cli_json(b, "groups", "reset-offsets", group, "--topic", f"{topic_name}:0", "--to-offset", "3",
                       "--execute")
    assert applied == {"group": group, "executed": True,
                       "offsets": [{"topic": topic_name, "partition": 0, "new_offset": 3}]}
    assert [group, "Empty", "classic"] in table(cli(b, "groups", "list"))  # blank protocol type: no member joined
    assert {"group_id": group, "protocol_type": "", "state": "Empty", "group_type": "classic"} in cli_json(
        b, "groups", "list", "--state", "Empty")

    assert table(cli(b, "groups", "describe", group)) == [
        ["Group", "State", "Topic", "Partition", "Current-Offset", "Log-End-Offset", "Lag", "Consumer-Id", "Host"],
        [group, "Empty", topic_name, "0", "3", "4", "1", "-", "-"]]
    cli(b, "groups", "reset-offsets", group, "--all-topics", "--to-earliest", "--execute")
    [described] = cli_json(b, "groups", "describe", group)
    assert described["group"]["state"] == "Empty"
    assert described["offsets"] == [{"topic": topic_name, "partition": 0, "current_offset": 0, "log_end_offset": 4,
                                     "lag": 4, "member_id": None}]

    assert table(cli(b, "groups", "delete", group)) == [["Group", "Result"], [group, "deleted"]]
    assert "GROUP_ID_NOT_FOUND" in cli(b, "groups", "delete", group, expect=1).stderr
    assert "GROUP_ID_NOT_FOUND" in cli(b, "--json", "groups", "describe", group, expect=1).stderr


def test_cluster_describe(shared_broker):
    [header, row] = table(cli(shared_broker.bootstrap, "cluster", "describe"))
    assert header == ["ClusterId", "BrokerId", "Host", "Port", "Controller"]
    assert row[1:] == ["0", "127.0.0.1", str(shared_broker.port), "True"]
    described = cli_json(shared_broker.bootstrap, "cluster", "describe")
    assert (described["controller_id"], described["brokers"][0]["port"]) == (0, shared_broker.port)


def test_transactions_commands_find_and_abort_a_hanging_transaction(broker, topic_name):
    b = broker.bootstrap
    cli(b, "topics", "create", topic_name, "--partitions", "1")
    pid, epoch = asyncio.run(open_transaction(broker.port, topic_name))
    produce_plain(b, topic_name, b"behind the stuck one")

    assert table(cli(b, "transactions", "list")) == [
        ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], [TXN_ID, "0", str(pid), "Ongoing"]]
    assert cli_json(b, "transactions", "list", "--state", "Ongoing") == [
        {"transactional_id": TXN_ID, "producer_id": pid, "state": "Ongoing", "coordinator_id": 0}]
    described = cli_json(b, "transactions", "describe", "--transactional-id", TXN_ID)
    assert (described["state"], described["topic_partitions"]) == (
        "Ongoing", [{"topic": topic_name, "partition": 0}])
    [header, row] = table(cli(b, "transactions", "describe", "--transactional-id", TXN_ID))
    assert header[:5] == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState"]
    assert row[:5] == ["0", TXN_ID, str(pid), str(epoch), "Ongoing"] and row[-1] == f"{topic_name}-0"
    assert "TRANSACTIONAL_ID_NOT_FOUND" in cli(b, "transactions", "describe", "--transactional-id", "nobody",
                                               expect=1).stderr
    assert cli_json(b, "transactions", "find-hanging", "--topic", topic_name, "--max-transaction-timeout", "0") == []
    assert "--topic or --broker-id" in cli(b, "transactions", "find-hanging", expect=2).stderr

    lose_transaction_coordinator_state(broker)

    [header, row] = table(cli(b, "transactions", "describe-producers", "--topic", topic_name, "--partition", "0"))
    assert header == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                      "CurrentTransactionStartOffset"]
    assert [row[0], row[1], row[2], row[5]] == [str(pid), str(epoch), "-", "0"]
    assert table(cli(b, "transactions", "find-hanging", "--topic", topic_name))[1:] == []  # younger than 15 min
    found = table(cli(b, "transactions", "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0"))
    assert found[0] == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                        "LastTimestamp", "Duration(min)"]
    assert [r[:6] for r in found[1:]] == [[topic_name, "0", str(pid), str(epoch), "-1", "0"]]
    [hanging] = cli_json(b, "transactions", "find-hanging", "--topic", topic_name, "--partition", "0",
                         "--max-transaction-timeout", "0")
    assert hanging["topic_partition"] == {"topic": topic_name, "partition": 0}
    assert hanging["producer"]["current_transaction_start_offset"] == 0

    assert "no open transaction starts at offset 1" in cli(b, "transactions", "abort", "--topic", topic_name,
                                                           "--partition", "0", "--start-offset", "1",
                                                           expect=1).stderr
    assert table(cli(b, "transactions", "abort", "--topic", topic_name, "--partition", "0", "--start-offset",
                     "0")) == [["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "Result"],
                               [topic_name, "0", str(pid), str(epoch), "0", "aborted"]]
    assert cli_json(b, "transactions", "find-hanging", "--topic", topic_name, "--max-transaction-timeout", "0") == []
    assert read_committed(b, topic_name, 1) == [b"behind the stuck one"]


def test_abort_by_producer_id_and_epoch_as_json(broker, topic_name):
    b = broker.bootstrap
    cli(b, "topics", "create", topic_name, "--partitions", "1")
    pid, epoch = asyncio.run(open_transaction(broker.port, topic_name))
    lose_transaction_coordinator_state(broker)
    aborted = cli_json(b, "transactions", "abort", "--topic", topic_name, "--partition", "0", "--producer-id",
                       str(pid), "--producer-epoch", str(epoch), "--coordinator-epoch", "0")
    assert aborted == {"aborted": {"topic_partition": {"topic": topic_name, "partition": 0}, "producer_id": pid,
                                   "producer_epoch": epoch, "coordinator_epoch": 0}}
    assert "identify the transaction" in cli(b, "transactions", "abort", "--topic", topic_name, "--partition", "0",
                                             expect=2).stderr

    async def lso():
        async with Admin(b) as admin:
            from weir.client.admin import LATEST
            from weir.client.types import TopicPartition
            return await admin.list_offsets({TopicPartition(topic_name, 0): LATEST}, read_committed=True)
    assert list((asyncio.run(lso())).values()) == [2]


def test_unreachable_broker_is_an_error_not_a_traceback():
    from tests.broker_process import free_port
    result = cli(f"127.0.0.1:{free_port()}", "--timeout-ms", "500", "topics", "list", expect=1)
    assert result.stderr.startswith("Error:") and "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [
    ["topics"], ["nouns"], ["groups", "reset-offsets", "g", "--to-latest"], ["topics", "alter-config", "t"],
    ["transactions", "find-hanging", "--partition", "0"], ["transactions", "abort", "--topic", "t", "--partition", "0",
                                                           "--producer-id", "1"]])
def test_usage_errors_exit_2_before_connecting(args):
    assert cli("127.0.0.1:1", *args, expect=2).stderr.startswith("usage:")


def test_groups_describe_shows_members_and_their_partitions(shared_broker, topic_name):
    b, group = shared_broker.bootstrap, f"{topic_name}-g"
    cli(b, "topics", "create", topic_name, "--partitions", "2")
    produce_plain(b, topic_name, b"x")
    cli(b, "groups", "reset-offsets", group, "--topic", f"{topic_name}:0", "--to-earliest", "--execute")
    consumer = join(b, group, topic_name)
    try:
        [described] = cli_json(b, "groups", "describe", group)
        [member] = described["group"]["members"]
        assert described["group"]["state"] == "Stable" and member["client_id"] == "lag-watcher"
        assert described["offsets"] == [  # partition 1 is assigned but has no committed offset yet
            {"topic": topic_name, "partition": 0, "current_offset": 0, "log_end_offset": 1, "lag": 1,
             "member_id": member["member_id"]},
            {"topic": topic_name, "partition": 1, "current_offset": None, "log_end_offset": 0, "lag": None,
             "member_id": member["member_id"]}]
        rows = table(cli(b, "groups", "describe", group))[1:]
        assert [r[:7] for r in rows] == [[group, "Stable", topic_name, "0", "0", "1", "1"],
                                         [group, "Stable", topic_name, "1", "-", "0", "-"]]
        refused = cli(b, "groups", "reset-offsets", group, "--all-topics", "--to-latest", "--execute", expect=1)
        assert "inactive" in refused.stderr and "Stable" in refused.stderr
        assert "NON_EMPTY_GROUP" in cli(b, "groups", "delete", group, expect=1).stderr
    finally:
        consumer.close()
