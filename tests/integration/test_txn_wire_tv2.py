"""Transaction version 2 (KIP-890 part 2) on the wire, as a Kafka 4 Java producer speaks it: Produce
v12 and TxnOffsetCommit v5 add their partitions themselves, EndTxn v5 bumps the epoch and answers it,
and a write delayed past its transaction's end is fenced instead of landing in the next one."""

import asyncio

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import end_txn, offset_fetch, produce, txn_offset_commit
from weir.protocol.records import Record, encode_batch

from .test_txn_wire import TOPIC, conn, init, offsets  # noqa: F401  (conn is a fixture)

READ_COMMITTED = 1


async def produce_v(conn, version, txn_id, pid, epoch, seq, value):
    batch = encode_batch([Record(value)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                         transactional=True)
    answer = await conn.request(ApiKey.PRODUCE, version, produce.REQUEST(
        transactional_id=txn_id, acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
            name=TOPIC, partition_data=[produce.PartitionData(index=0, records=batch)])]))
    return answer.responses[0].partition_responses[0].error_code


async def end_v5(conn, txn_id, pid, epoch, commit):
    answer = await conn.request(ApiKey.END_TXN, 5, end_txn.REQUEST(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit))
    return answer.error_code, answer.producer_id, answer.producer_epoch


async def until_stable(conn, expected):
    """The LSO once the markers of an ended transaction are written (they follow the EndTxn answer)."""
    async with asyncio.timeout(10):
        while (lso := await offsets(conn, READ_COMMITTED)) != expected:
            await asyncio.sleep(0.01)  # poll interval of a deadline-bounded wait on the broker's markers
    return lso


async def test_produce_v11_answers_transaction_abortable_where_v10_answered_invalid_txn_state(conn):
    answer = await init(conn, "v11", version=5)
    assert await produce_v(conn, 10, "v11", answer.producer_id, answer.producer_epoch, 0, b"x") \
        == Errors.INVALID_TXN_STATE
    assert await produce_v(conn, 11, "v11", answer.producer_id, answer.producer_epoch, 0, b"x") \
        == Errors.TRANSACTION_ABORTABLE


async def test_a_tv2_transaction_needs_no_add_requests_and_each_end_bumps_the_epoch(conn):
    answer = await init(conn, "tv2", version=5)
    pid, epoch = answer.producer_id, answer.producer_epoch
    assert await produce_v(conn, 12, "tv2", pid, epoch, 0, b"committed") == Errors.NONE
    assert await end_v5(conn, "tv2", pid, epoch, True) == (Errors.NONE, pid, epoch + 1)
    assert await until_stable(conn, 2) == 2  # the record and the COMMIT marker

    # The next transaction commits offsets without AddOffsetsToTxn, then aborts: they never count.
    epoch += 1
    assert await produce_v(conn, 12, "tv2", pid, epoch, 0, b"aborted") == Errors.NONE
    committed = await conn.request(ApiKey.TXN_OFFSET_COMMIT, 5, txn_offset_commit.REQUEST(
        transactional_id="tv2", group_id="tv2-group", producer_id=pid, producer_epoch=epoch, topics=[
            txn_offset_commit.RequestTopic(name=TOPIC, partitions=[txn_offset_commit.RequestPartition(
                partition_index=0, committed_offset=1, committed_metadata="")])]))
    assert committed.topics[0].partitions[0].error_code == Errors.NONE
    assert await end_v5(conn, "tv2", pid, epoch, False) == (Errors.NONE, pid, epoch + 1)
    assert await until_stable(conn, 4) == 4
    fetched = await conn.request(ApiKey.OFFSET_FETCH, 8, offset_fetch.REQUEST(groups=[offset_fetch.RequestGroup(
        group_id="tv2-group", topics=[offset_fetch.RequestGroupTopic(name=TOPIC, partition_indexes=[0])])],
        require_stable=True))
    assert fetched.groups[0].topics[0].partitions[0].committed_offset == -1
    # A retry of that EndTxn names the epoch before the bump and gets the same answer.
    assert await end_v5(conn, "tv2", pid, epoch, False) == (Errors.NONE, pid, epoch + 1)


async def test_a_late_write_from_an_ended_transaction_is_fenced(conn):
    """KIP-890's hanging-transaction case: a Produce of transaction 1, delayed in the network, arrives
    after transaction 1 committed and transaction 2 wrote to the same partition. At transaction
    version 2 the end bumped the epoch, so the late write is refused and read_committed readers never
    see it, whichever way transaction 2 ends."""
    answer = await init(conn, "late", version=5)
    pid, epoch = answer.producer_id, answer.producer_epoch
    assert await produce_v(conn, 12, "late", pid, epoch, 0, b"txn1") == Errors.NONE
    assert (await end_v5(conn, "late", pid, epoch, True))[0] == Errors.NONE
    assert await produce_v(conn, 12, "late", pid, epoch + 1, 0, b"txn2") == Errors.NONE
    assert await produce_v(conn, 12, "late", pid, epoch, 1, b"txn1, delayed") == Errors.INVALID_PRODUCER_EPOCH
    assert (await end_v5(conn, "late", pid, epoch + 1, False))[0] == Errors.NONE
    assert await until_stable(conn, 4) == 4  # txn1 + COMMIT + txn2 + ABORT: the late write is not there
