"""DescribeCluster, authorized operations, DescribeProducers, DescribeTransactions and ListTransactions
on the wire, with the answers and error codes Kafka gives."""

import asyncio

import pytest

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import (describe_cluster, describe_groups, describe_producers, describe_transactions,
                               list_transactions, metadata)
from weir.protocol.messages._dsl import INT32_MIN
from tests.integration.test_txn_wire import TOPIC, add_partition, conn, end, init, produce_txn  # noqa: F401

# Kafka's AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12 (written out here, not imported from the broker)
CLUSTER_OPS = (1 << 5) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12) | (1 << 7) | (1 << 8)
TOPIC_OPS = (1 << 3) | (1 << 4) | (1 << 5) | (1 << 8) | (1 << 6) | (1 << 7) | (1 << 10) | (1 << 11)
GROUP_OPS = (1 << 3) | (1 << 8) | (1 << 6) | (1 << 10) | (1 << 11)


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_describe_cluster(conn, broker, version):
    answer = await conn.request(ApiKey.DESCRIBE_CLUSTER, version, describe_cluster.REQUEST(
        include_cluster_authorized_operations=True))
    assert answer.error_code == Errors.NONE
    assert [(b.broker_id, b.host, b.port) for b in answer.brokers] == [(0, "127.0.0.1", broker.port)]
    assert answer.controller_id == 0
    assert answer.cluster_id and len(answer.cluster_id) == 22
    assert answer.cluster_authorized_operations == CLUSTER_OPS
    plain = await conn.request(ApiKey.DESCRIBE_CLUSTER, version, describe_cluster.REQUEST())
    assert plain.cluster_authorized_operations == INT32_MIN


async def test_describe_cluster_refuses_the_controller_endpoint_type(conn):
    answer = await conn.request(ApiKey.DESCRIBE_CLUSTER, 1, describe_cluster.REQUEST(endpoint_type=2))
    assert answer.error_code == Errors.MISMATCHED_ENDPOINT_TYPE
    answer = await conn.request(ApiKey.DESCRIBE_CLUSTER, 1, describe_cluster.REQUEST(endpoint_type=7))
    assert answer.error_code == Errors.UNSUPPORTED_ENDPOINT_TYPE


@pytest.mark.parametrize("version", [8, 10, 12])
async def test_metadata_authorized_operations(conn, version):
    asked = await conn.request(ApiKey.METADATA, version, metadata.REQUEST(
        topics=[metadata.RequestTopic(name=TOPIC)], include_cluster_authorized_operations=True,
        include_topic_authorized_operations=True))
    assert asked.topics[0].topic_authorized_operations == TOPIC_OPS
    if version <= 10:
        assert asked.cluster_authorized_operations == CLUSTER_OPS
    plain = await conn.request(ApiKey.METADATA, version, metadata.REQUEST(topics=[metadata.RequestTopic(name=TOPIC)]))
    assert plain.topics[0].topic_authorized_operations == INT32_MIN
    if version <= 10:
        assert plain.cluster_authorized_operations == INT32_MIN


async def test_describe_groups_authorized_operations(conn):
    answer = await conn.request(ApiKey.DESCRIBE_GROUPS, 5, describe_groups.REQUEST(
        groups=["g"], include_authorized_operations=True))
    assert answer.groups[0].authorized_operations == GROUP_OPS
    plain = await conn.request(ApiKey.DESCRIBE_GROUPS, 5, describe_groups.REQUEST(groups=["g"]))
    assert plain.groups[0].authorized_operations == INT32_MIN


async def describe_txn(conn, *txn_ids):
    answer = await conn.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, describe_transactions.REQUEST(
        transactional_ids=list(txn_ids)))
    return answer.transaction_states


async def list_txns(conn, version=2, **filters):
    answer = await conn.request(ApiKey.LIST_TRANSACTIONS, version, list_transactions.REQUEST(**filters))
    return answer


async def test_describe_transactions_follows_the_transaction(conn):
    started = await init(conn, "dt")
    pid, epoch = started.producer_id, started.producer_epoch
    [empty] = await describe_txn(conn, "dt")
    assert (empty.error_code, empty.transaction_state, empty.producer_id, empty.producer_epoch) == \
        (Errors.NONE, "Empty", pid, epoch)
    assert empty.transaction_timeout_ms == 60000 and empty.transaction_start_time_ms == -1 and empty.topics == []
    assert await add_partition(conn, "dt", pid, epoch) == Errors.NONE
    [ongoing] = await describe_txn(conn, "dt")
    assert ongoing.transaction_state == "Ongoing" and ongoing.transaction_start_time_ms > 0
    assert [(t.topic, t.partitions) for t in ongoing.topics] == [(TOPIC, [0])]
    assert await end(conn, "dt", pid, epoch, True) == Errors.NONE
    [after] = await describe_txn(conn, "dt")
    assert after.transaction_state in ("PrepareCommit", "CompleteCommit")


async def test_describe_transactions_errors(conn):
    unknown, empty = await describe_txn(conn, "never-seen", "")
    assert (unknown.transactional_id, unknown.error_code) == ("never-seen", Errors.TRANSACTIONAL_ID_NOT_FOUND)
    assert empty.error_code == Errors.INVALID_REQUEST


async def test_list_transactions_filters(conn):
    first = await init(conn, "lt-a")
    second = await init(conn, "lt-b")
    assert await add_partition(conn, "lt-b", second.producer_id, second.producer_epoch) == Errors.NONE

    def listed(answer):
        assert answer.error_code == Errors.NONE
        return sorted((s.transactional_id, s.producer_id, s.transaction_state) for s in answer.transaction_states)

    everything = listed(await list_txns(conn))
    assert ("lt-a", first.producer_id, "Empty") in everything and ("lt-b", second.producer_id, "Ongoing") in everything
    assert listed(await list_txns(conn, state_filters=["Ongoing"])) == [("lt-b", second.producer_id, "Ongoing")]
    assert listed(await list_txns(conn, producer_id_filters=[first.producer_id])) == [
        ("lt-a", first.producer_id, "Empty")]
    unknown = await list_txns(conn, state_filters=["Ongoing", "Bogus"])
    assert unknown.unknown_state_filters == ["Bogus"] and listed(unknown) == [("lt-b", second.producer_id, "Ongoing")]
    # v1: only transactions running longer than the filter; "lt-a" never started one (start -1), as in Kafka
    assert [s[0] for s in listed(await list_txns(conn, 1, duration_filter=3_600_000))] == ["lt-a"]
    # v2: the pattern must match the whole id
    assert [s[0] for s in listed(await list_txns(conn, transactional_id_pattern="lt-.*"))] == ["lt-a", "lt-b"]
    assert listed(await list_txns(conn, transactional_id_pattern="lt-")) == []
    assert (await list_txns(conn, transactional_id_pattern="lt-(")).error_code == Errors.INVALID_REGULAR_EXPRESSION


async def test_describe_producers(conn):
    started = await init(conn, "dp")
    pid, epoch = started.producer_id, started.producer_epoch
    assert await add_partition(conn, "dp", pid, epoch) == Errors.NONE
    assert await produce_txn(conn, "dp", pid, epoch, 0, b"a") == Errors.NONE
    assert await produce_txn(conn, "dp", pid, epoch, 1, b"b") == Errors.NONE
    answer = await conn.request(ApiKey.DESCRIBE_PRODUCERS, 0, describe_producers.REQUEST(topics=[
        describe_producers.TopicRequest(name=TOPIC, partition_indexes=[0, 5]),
        describe_producers.TopicRequest(name="no-such-topic", partition_indexes=[0])]))
    ours, missing_partition = answer.topics[0].partitions
    [producer] = ours.active_producers
    assert ours.error_code == Errors.NONE
    assert (producer.producer_id, producer.producer_epoch, producer.last_sequence,
            producer.current_txn_start_offset) == (pid, epoch, 1, 0)
    assert producer.last_timestamp == -1  # the batches' max timestamp: these records carry none
    assert missing_partition.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert answer.topics[1].partitions[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert await end(conn, "dp", pid, epoch, False) == Errors.NONE
    await wait_for(lambda: _txn_start(conn), -1)


async def _txn_start(conn):
    answer = await conn.request(ApiKey.DESCRIBE_PRODUCERS, 0, describe_producers.REQUEST(topics=[
        describe_producers.TopicRequest(name=TOPIC, partition_indexes=[0])]))
    return answer.topics[0].partitions[0].active_producers[0].current_txn_start_offset


async def wait_for(probe, expected, timeout=10.0):
    """Poll ``probe`` until it answers ``expected`` (the abort marker is written after EndTxn answers)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await probe()
        if value == expected or asyncio.get_running_loop().time() > deadline:
            assert value == expected
            return
        await asyncio.sleep(0.05)


async def test_describe_groups_v6_answers_an_unknown_group_group_id_not_found(conn):
    """KIP-1043: from v6 a group that does not exist is an error (the Java Admin's
    describeConsumerGroups then fails with GroupIdNotFoundException, as against Kafka 4);
    before v6 it is described as Dead."""
    answer = await conn.request(ApiKey.DESCRIBE_GROUPS, 6, describe_groups.REQUEST(
        groups=["no-such-group"], include_authorized_operations=True))
    group = answer.groups[0]
    assert (group.error_code, group.error_message) == (Errors.GROUP_ID_NOT_FOUND, "Group no-such-group not found.")
    assert (group.group_state, group.members, group.authorized_operations) == ("Dead", [], INT32_MIN)
    before = await conn.request(ApiKey.DESCRIBE_GROUPS, 5, describe_groups.REQUEST(groups=["no-such-group"]))
    assert (before.groups[0].error_code, before.groups[0].group_state) == (Errors.NONE, "Dead")
