"""Group APIs on the wire: version-dependent shapes and the KIP-447 zombie check."""

import asyncio

import pytest

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import (add_offsets_to_txn, create_topics, heartbeat, join_group, leave_group,
                                    offset_commit, sync_group, txn_offset_commit)
from tests.broker_process import BrokerProcess
from tests.integration.test_txn_wire import init

TOPIC, GROUP = "wire", "wire-group"
PROTOCOLS = [join_group.Protocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00")]


@pytest.fixture
def group_broker(tmp_path):
    process = BrokerProcess(tmp_path / "data", overrides={"group.initial.rebalance.delay.ms": "0"}).start()
    yield process
    process.stop()


@pytest.fixture
async def connect(group_broker):
    opened = []

    async def open_one():
        connection = await Connection.open("127.0.0.1", group_broker.port)
        opened.append(connection)
        return connection
    first = await open_one()
    await first.request(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(timeout_ms=5000, topics=[
        create_topics.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1, assignments=[],
                                     configs=[])]))
    yield open_one
    for connection in opened:
        await connection.close()


async def join(conn, member_id="", version=5, session=10000):
    return await conn.request(ApiKey.JOIN_GROUP, version, join_group.REQUEST(
        group_id=GROUP, session_timeout_ms=session, rebalance_timeout_ms=10000, member_id=member_id,
        protocol_type="consumer", protocols=PROTOCOLS))


async def sync(conn, member_id, generation, assignments=()):
    return await conn.request(ApiKey.SYNC_GROUP, 3, sync_group.REQUEST(
        group_id=GROUP, generation_id=generation, member_id=member_id,
        assignments=[sync_group.Assignment(member_id=m, assignment=a) for m, a in assignments]))


async def member_of_generation(conn):
    """Join (v5: MEMBER_ID_REQUIRED, then with the id) and sync as the only member."""
    required = await join(conn)
    assert required.error_code == Errors.MEMBER_ID_REQUIRED and required.generation_id == -1
    joined = await join(conn, required.member_id)
    assert joined.error_code == Errors.NONE and joined.leader == required.member_id
    assert (await sync(conn, joined.member_id, joined.generation_id, [(joined.member_id, b"A")])).assignment == b"A"
    return joined.member_id, joined.generation_id


async def test_join_versions_and_heartbeat(connect):
    conn = await connect()
    old = await join(conn, version=3)
    assert old.error_code == Errors.NONE and old.member_id  # below v4 the id comes with the first answer
    assert old.protocol_name == "range" and [m.member_id for m in old.members] == [old.member_id]
    beat = await conn.request(ApiKey.HEARTBEAT, 3, heartbeat.REQUEST(
        group_id=GROUP, generation_id=old.generation_id, member_id=old.member_id))
    assert beat.error_code == Errors.NONE  # CompletingRebalance: heartbeats are fine
    bad = await join(conn, session=1)
    assert bad.error_code == Errors.INVALID_SESSION_TIMEOUT and bad.protocol_name == ""


async def test_leave_group_answers_per_version(connect):
    conn = await connect()
    member_id, _generation = await member_of_generation(conn)
    v0 = await conn.request(ApiKey.LEAVE_GROUP, 0, leave_group.REQUEST(group_id=GROUP, member_id="nobody"))
    assert v0.error_code == Errors.UNKNOWN_MEMBER_ID
    v3 = await conn.request(ApiKey.LEAVE_GROUP, 3, leave_group.REQUEST(group_id=GROUP, members=[
        leave_group.MemberIdentity(member_id="nobody"), leave_group.MemberIdentity(member_id=member_id)]))
    assert v3.error_code == Errors.NONE
    assert [(m.member_id, m.error_code) for m in v3.members] == [
        ("nobody", Errors.UNKNOWN_MEMBER_ID), (member_id, Errors.NONE)]


async def test_zombie_from_an_old_generation_cannot_commit_offsets(connect):
    """KIP-447: TxnOffsetCommit v3 carries the generation; an older one is ILLEGAL_GENERATION."""
    first, second = await connect(), await connect()
    old_member, old_generation = await member_of_generation(first)
    producer = await init(first, "zombie-txn")
    pid, epoch = producer.producer_id, producer.producer_epoch
    added = await first.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, add_offsets_to_txn.REQUEST(
        transactional_id="zombie-txn", producer_id=pid, producer_epoch=epoch, group_id=GROUP))
    assert added.error_code == Errors.NONE

    async def txn_commit(generation, member_id, version=3):
        answer = await first.request(ApiKey.TXN_OFFSET_COMMIT, version, txn_offset_commit.REQUEST(
            transactional_id="zombie-txn", group_id=GROUP, producer_id=pid, producer_epoch=epoch,
            generation_id_or_member_epoch=generation, member_id=member_id, topics=[txn_offset_commit.RequestTopic(
                name=TOPIC, partitions=[txn_offset_commit.RequestPartition(
                    partition_index=0, committed_offset=5, committed_metadata="")])]))
        return answer.topics[0].partitions[0].error_code

    assert await txn_commit(old_generation, old_member) == Errors.NONE
    # a second member joins; both rejoin into the next generation
    required = await join(second)
    newcomer = asyncio.ensure_future(join(second, required.member_id))
    rejoined = await join(first, old_member)
    assert rejoined.generation_id == old_generation + 1 == (await newcomer).generation_id
    assert await txn_commit(old_generation, old_member) == Errors.ILLEGAL_GENERATION
    assert await txn_commit(rejoined.generation_id, "someone-else") == Errors.UNKNOWN_MEMBER_ID
    assert await txn_commit(-1, "", version=0) == Errors.NONE  # v0 carries no generation: let through
    commit = await first.request(ApiKey.OFFSET_COMMIT, 8, offset_commit.REQUEST(
        group_id=GROUP, generation_id_or_member_epoch=old_generation, member_id=old_member,
        topics=[offset_commit.RequestTopic(name=TOPIC, partitions=[offset_commit.RequestPartition(
            partition_index=0, committed_offset=1, committed_metadata="")])]))
    assert commit.topics[0].partitions[0].error_code == Errors.ILLEGAL_GENERATION
