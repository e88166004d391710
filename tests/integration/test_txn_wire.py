"""Transaction APIs on the wire, with the error codes and versions clients and operators rely on."""

import pytest

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import (add_offsets_to_txn, add_partitions_to_txn, create_topics, end_txn, fetch,
                               init_producer_id, list_offsets, offset_fetch, produce, txn_offset_commit,
                               write_txn_markers)
from weir.protocol.records import Record, encode_batch

TOPIC = "wire"


@pytest.fixture
async def conn(broker):
    connection = await Connection.open("127.0.0.1", broker.port)
    await connection.request(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(timeout_ms=5000, topics=[
        create_topics.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1, assignments=[],
                                     configs=[])]))
    yield connection
    await connection.close()


async def init(conn, txn_id, version=4, **extra):
    answer = await conn.request(ApiKey.INIT_PRODUCER_ID, version, init_producer_id.REQUEST(
        transactional_id=txn_id, transaction_timeout_ms=60000, **extra))
    return answer


async def add_partition(conn, txn_id, pid, epoch, version=3):
    answer = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, version, add_partitions_to_txn.REQUEST(
        v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[add_partitions_to_txn.Topic(name=TOPIC, partitions=[0])]))
    return answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code


async def produce_txn(conn, txn_id, pid, epoch, seq, value):
    batch = encode_batch([Record(value)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                         transactional=True)
    answer = await conn.request(ApiKey.PRODUCE, 9, produce.REQUEST(
        transactional_id=txn_id, acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
            name=TOPIC, partition_data=[produce.PartitionData(index=0, records=batch)])]))
    return answer.responses[0].partition_responses[0].error_code


async def end(conn, txn_id, pid, epoch, commit, version=3):
    answer = await conn.request(ApiKey.END_TXN, version, end_txn.REQUEST(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit))
    return answer.error_code


async def offsets(conn, isolation):
    answer = await conn.request(ApiKey.LIST_OFFSETS, 7, list_offsets.REQUEST(
        replica_id=-1, isolation_level=isolation, topics=[list_offsets.RequestTopic(
            name=TOPIC, partitions=[list_offsets.RequestPartition(partition_index=0, timestamp=-1)])]))
    return answer.topics[0].partitions[0].offset


async def test_produce_outside_the_transaction_is_invalid_txn_state(conn):
    answer = await init(conn, "t")
    pid, epoch = answer.producer_id, answer.producer_epoch
    assert await produce_txn(conn, "t", pid, epoch, 0, b"not added") == Errors.INVALID_TXN_STATE
    # As Apache Kafka answers (tests/reference/test_differential_verification.py).
    assert await produce_txn(conn, None, pid, epoch, 0, b"no id") == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert await add_partition(conn, "t", pid, epoch) == Errors.NONE
    assert await produce_txn(conn, "t", pid, epoch, 0, b"added") == Errors.NONE


async def test_old_request_versions_get_invalid_producer_epoch_instead_of_producer_fenced(conn):
    answer = await init(conn, "t")
    pid, epoch = answer.producer_id, answer.producer_epoch
    await init(conn, "t")  # epoch + 1
    assert await add_partition(conn, "t", pid, epoch, version=1) == Errors.INVALID_PRODUCER_EPOCH
    assert await add_partition(conn, "t", pid, epoch, version=2) == Errors.PRODUCER_FENCED
    assert await end(conn, "t", pid, epoch, True, version=0) == Errors.INVALID_PRODUCER_EPOCH
    recovered = await init(conn, "t", version=3, producer_id=pid + 1000, producer_epoch=0)
    assert recovered.error_code == Errors.INVALID_PRODUCER_EPOCH  # KIP-360 refusal, pre-v4 spelling
    assert (await init(conn, "t", version=4, producer_id=pid + 1000, producer_epoch=0)).error_code \
        == Errors.PRODUCER_FENCED
    assert await end(conn, "t", pid + 1000, epoch + 1, True) == Errors.INVALID_PRODUCER_ID_MAPPING
    assert (await init(conn, "")).error_code == Errors.INVALID_REQUEST


async def test_lso_under_read_committed_and_an_operator_abort_with_write_txn_markers(conn):
    answer = await init(conn, "hanging")
    pid, epoch = answer.producer_id, answer.producer_epoch
    await add_partition(conn, "hanging", pid, epoch)
    assert await produce_txn(conn, "hanging", pid, epoch, 0, b"open") == Errors.NONE
    assert (await offsets(conn, 0), await offsets(conn, 1)) == (1, 0)
    marker = await conn.request(ApiKey.WRITE_TXN_MARKERS, 1, write_txn_markers.REQUEST(markers=[
        write_txn_markers.Marker(producer_id=pid, producer_epoch=epoch, transaction_result=False,
                                 coordinator_epoch=0, topics=[write_txn_markers.MarkerTopic(
                                     name=TOPIC, partition_indexes=[0])])]))
    assert marker.markers[0].topics[0].partitions[0].error_code == Errors.NONE
    assert (await offsets(conn, 0), await offsets(conn, 1)) == (2, 2)
    answer = await conn.request(ApiKey.FETCH, 12, fetch.REQUEST(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=1, session_id=0,
        session_epoch=-1, topics=[fetch.FetchTopic(topic=TOPIC, partitions=[fetch.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id=""))
    data = answer.responses[0].partitions[0]
    assert data.last_stable_offset == 2
    assert [(a.producer_id, a.first_offset) for a in data.aborted_transactions] == [(pid, 0)]


async def test_pending_transactional_offsets_are_unstable_for_require_stable(conn):
    answer = await init(conn, "off")
    pid, epoch = answer.producer_id, answer.producer_epoch
    added = await conn.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, add_offsets_to_txn.REQUEST(
        transactional_id="off", producer_id=pid, producer_epoch=epoch, group_id="grp"))
    assert added.error_code == Errors.NONE
    committed = await conn.request(ApiKey.TXN_OFFSET_COMMIT, 3, txn_offset_commit.REQUEST(
        transactional_id="off", group_id="grp", producer_id=pid, producer_epoch=epoch, topics=[
            txn_offset_commit.RequestTopic(name=TOPIC, partitions=[txn_offset_commit.RequestPartition(
                partition_index=0, committed_offset=3, committed_metadata="m")])]))
    assert committed.topics[0].partitions[0].error_code == Errors.NONE

    async def fetch_offset(require_stable):
        answer = await conn.request(ApiKey.OFFSET_FETCH, 8, offset_fetch.REQUEST(groups=[offset_fetch.RequestGroup(
            group_id="grp", topics=[offset_fetch.RequestGroupTopic(name=TOPIC, partition_indexes=[0])])],
            require_stable=require_stable))
        part = answer.groups[0].topics[0].partitions[0]
        return part.committed_offset, part.error_code

    assert await fetch_offset(True) == (-1, Errors.UNSTABLE_OFFSET_COMMIT)
    assert await fetch_offset(False) == (-1, Errors.NONE)
    assert await end(conn, "off", pid, epoch, True) == Errors.NONE
    assert await fetch_offset(True) == (3, Errors.NONE)
