"""Transactional offsets: pending until the marker, committed or discarded by it, rebuilt by replay."""

from weir.broker.group.offsets import OffsetEntry
from weir.protocol.errors import Errors
from tests.txn.test_coordinator import code_of, make_context, settle

GROUP = "g"
TP = ("data", 0)


async def txn_commit_offsets(context, txn_id, offset):
    pid, epoch = await context.txn.init_producer_id(txn_id, 60000)
    topic, index = context.txn.offsets_partition(GROUP)
    context.offsets.log.partition(index)
    await context.txn.add_partitions(txn_id, pid, epoch, {(topic, index)})
    await context.offsets.commit(GROUP, {TP: OffsetEntry(offset, -1, "m", 0)}, producer_id=pid,
                                 producer_epoch=epoch, verify_txn=context.txn.verifier(txn_id, topic, index))
    return pid, epoch


def fetched(context, require_stable=True):
    [(_tp, entry, code)] = context.offsets.fetch(GROUP, [TP], require_stable)
    return (entry.offset if entry else -1), code


async def test_pending_until_commit_marker(tmp_path):
    context = make_context(tmp_path)
    try:
        await context.offsets.commit(GROUP, {TP: OffsetEntry(5, -1, "", 0)})
        pid, epoch = await txn_commit_offsets(context, "t1", 42)
        assert fetched(context) == (-1, Errors.UNSTABLE_OFFSET_COMMIT)
        assert fetched(context, require_stable=False) == (5, Errors.NONE)
        await context.txn.end_txn("t1", pid, epoch, True)
        await settle(context)
        assert fetched(context) == (42, Errors.NONE)
    finally:
        await context.close()


async def test_abort_discards_and_replay_rebuilds(tmp_path):
    context = make_context(tmp_path)
    await context.offsets.commit(GROUP, {TP: OffsetEntry(5, -1, "", 0)})
    pid, epoch = await txn_commit_offsets(context, "t1", 42)
    await context.txn.end_txn("t1", pid, epoch, False)
    await settle(context)
    assert fetched(context) == (5, Errors.NONE)
    await txn_commit_offsets(context, "t2", 77)  # left pending at shutdown
    await context.close()
    reopened = make_context(tmp_path)
    try:
        assert fetched(reopened) == (-1, Errors.UNSTABLE_OFFSET_COMMIT)
        assert fetched(reopened, require_stable=False) == (5, Errors.NONE)
    finally:
        await reopened.close()


async def test_offsets_need_the_group_partition_in_the_transaction(tmp_path):
    context = make_context(tmp_path)
    try:
        pid, epoch = await context.txn.init_producer_id("t1", 60000)
        await context.txn.add_partitions("t1", pid, epoch, {TP})  # data only, no AddOffsetsToTxn
        topic, index = context.txn.offsets_partition(GROUP)
        code = await code_of(context.offsets.commit(GROUP, {TP: OffsetEntry(1, -1, "", 0)}, producer_id=pid,
                                                    producer_epoch=epoch,
                                                    verify_txn=context.txn.verifier("t1", topic, index)))
        assert code == Errors.INVALID_TXN_STATE
        assert fetched(context) == (-1, Errors.NONE)
    finally:
        await context.close()

