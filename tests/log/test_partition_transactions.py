"""Transactions on one partition: LSO, markers, the aborted-transaction index, recovery."""

import os

import pytest

from weir.broker.log import partition_txns
from weir.broker.log.txn_index import AbortedTxn, TransactionIndex
from weir.protocol import records as rec
from weir.protocol.errors import Errors, KafkaError
from tests.log.test_partition import open_partition

PID, EPOCH = 7, 0


def allow(_header):
    """A coordinator that says yes (the partition is in the transaction)."""


async def txn_append(partition, *values, pid=PID, epoch=EPOCH, seq=0, verify=allow, transactional=True):
    batch = memoryview(rec.encode_batch([rec.Record(v, timestamp=1000) for v in values], producer_id=pid,
                                        producer_epoch=epoch, base_sequence=seq, transactional=transactional))
    validated = partition.validate_client_batch(batch, 9, 0)
    return (await partition.append_client_batch(validated.batch, validated.header, 0, verify)).base_offset


async def plain_append(partition, *values):
    batch = memoryview(rec.encode_batch([rec.Record(v, timestamp=1000) for v in values]))
    return (await partition.append_client_batch(batch, rec.read_header(batch), 0)).base_offset


def visible(partition, offset=0, bound=None):
    data = partition.read(offset, 10**9, bound).records
    return [(h.is_control, [r.value for r in records]) for h, records in rec.decode_batches(data)]


async def test_open_transaction_holds_the_lso_until_its_marker(tmp_path):
    p = open_partition(tmp_path)
    await plain_append(p, b"before")
    first = await txn_append(p, b"t1", b"t2")
    await plain_append(p, b"after")
    assert (p.high_watermark, p.last_stable_offset) == (4, first)
    assert visible(p, 0, p.last_stable_offset) == [(False, [b"before"])]
    marker = await p.append_marker(PID, EPOCH, 0, True, 5000)
    assert marker == 4 and p.last_stable_offset == p.high_watermark == 5
    assert [control for control, _values in visible(p, 0, p.last_stable_offset)] == [False, False, False, True]
    assert partition_txns.aborted_between(p, 0, 5) == []


async def test_abort_is_indexed_with_its_range_and_lso(tmp_path):
    p = open_partition(tmp_path)
    await txn_append(p, b"a1", pid=1, seq=0)
    await txn_append(p, b"b1", pid=2, seq=0)
    await txn_append(p, b"a2", pid=1, seq=1)
    abort_at = await p.append_marker(1, EPOCH, 0, False, 0)
    [aborted] = partition_txns.aborted_between(p, 0, p.high_watermark)
    # producer 2 is still open from offset 1, so the LSO right after the abort is 1
    assert aborted == (1, 0, abort_at, 1)
    assert p.last_stable_offset == 1
    await p.append_marker(2, EPOCH, 0, True, 0)
    assert p.last_stable_offset == p.high_watermark
    assert partition_txns.aborted_between(p, abort_at + 1, p.high_watermark) == []
    assert (tmp_path / "00000000000000000000.txnindex").stat().st_size == 34


async def test_fetch_range_selects_only_overlapping_aborts(tmp_path):
    p = open_partition(tmp_path)
    await txn_append(p, b"x", pid=1)
    await p.append_marker(1, EPOCH, 0, False, 0)         # aborted [0, 1]
    await plain_append(p, b"p")                          # 2
    await txn_append(p, b"y", pid=2)                     # 3
    await p.append_marker(2, EPOCH, 0, False, 0)         # aborted [3, 4]
    assert [a.producer_id for a in partition_txns.aborted_between(p, 0, 1)] == [1]
    assert [a.producer_id for a in partition_txns.aborted_between(p, 2, 3)] == []
    assert [a.producer_id for a in partition_txns.aborted_between(p, 2, 5)] == [2]
    assert [a.producer_id for a in partition_txns.aborted_between(p, 0, 5)] == [1, 2]


async def test_a_transactional_batch_needs_the_coordinator_and_a_plain_one_waits(tmp_path):
    p = open_partition(tmp_path)

    def refuse(_header):
        raise KafkaError(Errors.INVALID_TXN_STATE, "not in the transaction")

    with pytest.raises(KafkaError) as err:
        await txn_append(p, b"x", verify=refuse)
    assert err.value.code == Errors.INVALID_TXN_STATE and p.high_watermark == 0
    with pytest.raises(KafkaError) as err:
        await txn_append(p, b"x", verify=None)
    assert err.value.code == Errors.INVALID_TXN_STATE
    await txn_append(p, b"x")
    await txn_append(p, b"y", seq=1, verify=refuse)  # already open here: no second verification
    with pytest.raises(KafkaError) as err:  # a non-transactional write from the same producer meanwhile
        await txn_append(p, b"z", seq=2, transactional=False)
    assert err.value.code == Errors.INVALID_TXN_STATE


async def test_markers_check_epochs_and_a_fencing_abort_voids_the_old_epoch(tmp_path):
    p = open_partition(tmp_path)
    await txn_append(p, b"x", epoch=3)
    with pytest.raises(KafkaError) as err:
        await p.append_marker(PID, 2, 0, False, 0)
    assert err.value.code == Errors.INVALID_PRODUCER_EPOCH
    await p.append_marker(PID, 4, 0, False, 0)  # the coordinator fenced: abort at epoch + 1
    with pytest.raises(KafkaError) as err:
        await txn_append(p, b"zombie", epoch=3, seq=1)
    assert err.value.code == Errors.INVALID_PRODUCER_EPOCH
    with pytest.raises(KafkaError) as err:
        await p.append_marker(PID, 4, -1, True, 0)  # a coordinator epoch below the stored 0
    assert err.value.code == Errors.TRANSACTION_COORDINATOR_FENCED


async def test_open_transactions_and_aborts_survive_reopen_without_a_snapshot(tmp_path):
    p = open_partition(tmp_path)
    await txn_append(p, b"a", pid=1)
    await p.append_marker(1, EPOCH, 0, False, 0)
    await txn_append(p, b"b", pid=2)
    lso, aborted = p.last_stable_offset, partition_txns.aborted_between(p, 0, p.high_watermark)
    for segment in p.segments:  # a crash: no clean close, no snapshot
        segment.close()
    for snapshot in tmp_path.glob("*.snapshot"):
        snapshot.unlink()
    q = open_partition(tmp_path)
    assert q.last_stable_offset == lso == 2
    assert partition_txns.aborted_between(q, 0, q.high_watermark) == aborted
    await q.append_marker(2, EPOCH, 0, True, 0)
    assert q.last_stable_offset == q.high_watermark


async def test_reopen_from_a_snapshot_keeps_the_open_transaction_and_index(tmp_path):
    p = open_partition(tmp_path, **{"segment.bytes": 200})
    await txn_append(p, b"a" * 50, pid=1)
    await p.append_marker(1, EPOCH, 0, False, 0)
    await txn_append(p, b"b" * 50, pid=2)
    await plain_append(p, b"c" * 150)  # rolls: snapshot written with producer 2 open
    assert len(p.segments) > 1
    lso, aborted = p.last_stable_offset, partition_txns.aborted_between(p, 0, p.high_watermark)
    p.close()
    q = open_partition(tmp_path, **{"segment.bytes": 200})
    assert (q.last_stable_offset, partition_txns.aborted_between(q, 0, q.high_watermark)) == (lso, aborted)


def test_truncating_the_aborted_transaction_index_cuts_its_file_in_place(tmp_path):
    # Kafka's TransactionIndex.truncateTo cuts in place: a crash leaves the old file or its prefix,
    # never the empty file a rewrite opened with O_TRUNC leaves in between
    index = TransactionIndex(str(tmp_path / "00000000000000000000.txnindex"))
    entries = [AbortedTxn(7, 0, 2, 0), AbortedTxn(7, 3, 5, 3), AbortedTxn(8, 6, 9, 6)]
    for entry in entries:
        index.append(entry)
    inode = os.stat(index.path).st_ino
    index.truncate_from(5)  # the abort whose marker is at 5 will be replayed
    assert index.entries == entries[:1]
    assert os.stat(index.path).st_ino == inode and os.path.getsize(index.path) == 34
    assert TransactionIndex(index.path).load() == entries[:1]
    index.truncate_from(0)
    assert index.entries == [] and not os.path.exists(index.path)
