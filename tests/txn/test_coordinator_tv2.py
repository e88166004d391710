"""Transaction version 2 (KIP-890 part 2) in the coordinator: the epoch bumped at every end, retries
known by the epoch they name, empty aborts, producer id rotation on overflow, implicit adds, and the
records that carry it across a restart. Kafka 4.3's TransactionCoordinator is the reference."""

import asyncio

import pytest

from weir.broker.clock import ManualClock
from weir.broker.txn.state import TV2, TxnMetadata, TxnState
from weir.protocol import records as rec
from weir.protocol.errors import Errors

from .test_coordinator import TXN, code_of, make_context, settle


@pytest.fixture
async def ctx(tmp_path):
    context = make_context(tmp_path)
    yield context
    await context.close()


async def produce(context, pid, epoch, index, value):
    """A Produce v12: the partition joins the transaction through the coordinator, then the append."""
    await context.txn.add_partitions_implicitly(TXN, pid, epoch, {("data", index)})
    partition = context.logs.partition("data", index)
    batch = memoryview(rec.encode_batch([rec.Record(value, timestamp=1)], producer_id=pid, producer_epoch=epoch,
                                        base_sequence=0, transactional=True))
    await partition.append_client_batch(batch, rec.read_header(batch), 0, context.txn.verifier(TXN, "data", index))


def marker_epochs(context, index):
    partition = context.logs.partition("data", index)
    epochs, offset = [], partition.log_start_offset
    while offset < partition.high_watermark:
        read = partition.read(offset, 1 << 20)
        epochs += [h.producer_epoch for _pos, h in rec.iter_headers(bytes(read.records)) if h.is_control]
        offset = read.end_offset
    return epochs


async def test_commit_bumps_the_epoch_and_the_markers_carry_it(ctx):
    pid, epoch = await ctx.txn.init_producer_id(TXN, 60000)
    await produce(ctx, pid, epoch, 0, b"x")
    assert ctx.txn.txns[TXN].client_version == TV2
    assert await ctx.txn.end_txn(TXN, pid, epoch, True, TV2) == (pid, epoch + 1)
    await settle(ctx)
    metadata = ctx.txn.txns[TXN]
    assert (metadata.state, metadata.producer_epoch) == (TxnState.COMPLETE_COMMIT, epoch + 1)
    assert marker_epochs(ctx, 0) == [epoch + 1]
    # the next transaction runs at the new epoch; the old one is fenced
    await produce(ctx, pid, epoch + 1, 0, b"y")
    assert await code_of(produce(ctx, pid, epoch, 1, b"late")) == Errors.PRODUCER_FENCED


async def test_a_retried_end_is_answered_with_the_epoch_it_led_to(ctx):
    pid, epoch = await ctx.txn.init_producer_id(TXN, 60000)
    await produce(ctx, pid, epoch, 0, b"x")
    await ctx.txn.end_txn(TXN, pid, epoch, True, TV2)
    await settle(ctx)
    assert await ctx.txn.end_txn(TXN, pid, epoch, True, TV2) == (pid, epoch + 1)  # the retry: no second bump
    assert ctx.txn.txns[TXN].producer_epoch == epoch + 1
    assert await code_of(ctx.txn.end_txn(TXN, pid, epoch, False, TV2)) == Errors.INVALID_TXN_STATE
    assert await code_of(ctx.txn.end_txn(TXN, pid, epoch - 1, True, TV2)) == Errors.PRODUCER_FENCED


@pytest.mark.parametrize("state", [TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT])
async def test_kafkas_table_for_states_with_no_transaction_open(ctx, state):
    """Empty / CompleteAbort / CompleteCommit x abort / commit x the current epoch / a retry's epoch."""
    expected = {  # (abort retry, abort current, commit retry, commit current); "EB" = bumped and ended
        TxnState.EMPTY: (Errors.PRODUCER_FENCED, "EB", Errors.PRODUCER_FENCED, Errors.INVALID_TXN_STATE),
        TxnState.COMPLETE_ABORT: (Errors.NONE, "EB", Errors.INVALID_TXN_STATE, Errors.INVALID_TXN_STATE),
        TxnState.COMPLETE_COMMIT: (Errors.INVALID_TXN_STATE, "EB", Errors.NONE, Errors.INVALID_TXN_STATE),
    }[state]

    async def reach():
        pid, epoch = await ctx.txn.init_producer_id(TXN, 60000)
        if state != TxnState.EMPTY:
            await produce(ctx, pid, epoch, 0, b"x")
            pid, epoch = await ctx.txn.end_txn(TXN, pid, epoch, state == TxnState.COMPLETE_COMMIT, TV2)
            await settle(ctx)
        assert ctx.txn.txns[TXN].state == state
        return pid, epoch

    for index, (commit, retry) in enumerate([(False, True), (False, False), (True, True), (True, False)]):
        pid, epoch = await reach()
        answer = await code_of(ctx.txn.end_txn(TXN, pid, epoch - 1 if retry else epoch, commit, TV2))
        await settle(ctx)
        if expected[index] == "EB":
            assert answer == Errors.NONE
            assert (ctx.txn.txns[TXN].state, ctx.txn.txns[TXN].producer_epoch) == (TxnState.COMPLETE_ABORT, epoch + 1)
        else:
            assert answer == expected[index], (commit, retry)


async def test_an_exhausted_epoch_hands_over_to_a_new_producer_id(ctx):
    pid, _ = await ctx.txn.init_producer_id(TXN, 60000)
    ctx.txn.replay(TXN, ctx.txn.txns[TXN].transition_to(TxnState.EMPTY, producer_epoch=32766))
    await produce(ctx, pid, 32766, 0, b"x")
    new_pid, new_epoch = await ctx.txn.end_txn(TXN, pid, 32766, True, TV2)
    assert new_pid != pid and new_epoch == 0
    await settle(ctx)
    assert marker_epochs(ctx, 0) == [32767]  # the old id's last epoch closes its transaction
    metadata = ctx.txn.txns[TXN]
    assert (metadata.producer_id, metadata.producer_epoch, metadata.previous_producer_id) == (new_pid, 0, pid)
    # a retry names the old id at its last epoch and learns the new one
    assert await ctx.txn.end_txn(TXN, pid, 32766, True, TV2) == (new_pid, 0)
    await produce(ctx, new_pid, 0, 1, b"y")


async def test_a_timed_out_transaction_at_tv2_lets_the_producer_abort_and_go_on(tmp_path):
    """Kafka 4 aborts a timed-out transaction at its finalized version: the producer's own abort at
    the old epoch is then a retry of that abort, answered with the new epoch (not PRODUCER_FENCED)."""
    clock = ManualClock()
    context = make_context(tmp_path, clock)
    assert context.txn.transaction_version == TV2  # the default level, as Kafka 4 formats
    try:
        pid, epoch = await context.txn.init_producer_id(TXN, 5000)
        await produce(context, pid, epoch, 0, b"stalled")
        clock.advance(6000)
        assert await context.txn.abort_timed_out() == 1
        await settle(context)
        assert await context.txn.end_txn(TXN, pid, epoch, False, TV2) == (pid, epoch + 1)
        await produce(context, pid, epoch + 1, 0, b"next")
        assert await context.txn.end_txn(TXN, pid, epoch + 1, True, TV2) == (pid, epoch + 2)
    finally:
        await context.close()


async def test_a_write_in_flight_is_waited_for_by_an_implicit_add(ctx):
    pid, epoch = await ctx.txn.init_producer_id(TXN, 60000)
    # two partitions join at once, as two pipelined Produce v12 requests would make them
    await asyncio.gather(produce(ctx, pid, epoch, 0, b"a"), produce(ctx, pid, epoch, 1, b"b"))
    assert ctx.txn.txns[TXN].partitions == {("data", 0), ("data", 1)}


async def test_tv1_and_tv2_transactions_share_the_coordinator(ctx):
    tv1 = "txn-tv1"
    pid1, epoch1 = await ctx.txn.init_producer_id(tv1, 60000)
    await ctx.txn.add_partitions(tv1, pid1, epoch1, {("data", 1)})
    pid2, epoch2 = await ctx.txn.init_producer_id(TXN, 60000)
    await produce(ctx, pid2, epoch2, 0, b"x")
    assert await ctx.txn.end_txn(tv1, pid1, epoch1, True) == (-1, -1)
    assert await ctx.txn.end_txn(TXN, pid2, epoch2, True, TV2) == (pid2, epoch2 + 1)
    await settle(ctx)
    assert ctx.txn.txns[tv1].producer_epoch == epoch1  # version 1 leaves the epoch alone
    assert ctx.txn.txns[TXN].producer_epoch == epoch2 + 1


async def test_tv2_state_survives_a_restart(tmp_path):
    context = make_context(tmp_path)
    pid, _ = await context.txn.init_producer_id(TXN, 60000)
    context.txn.replay(TXN, context.txn.txns[TXN].transition_to(TxnState.EMPTY, producer_epoch=32766))
    await produce(context, pid, 32766, 0, b"x")
    await context.txn.end_txn(TXN, pid, 32766, False, TV2)
    await settle(context)
    before = context.txn.txns[TXN]
    await context.close()
    context = make_context(tmp_path)
    try:
        after = context.txn.txns[TXN]
        assert (after.producer_id, after.producer_epoch, after.previous_producer_id, after.client_version) == (
            before.producer_id, 0, pid, TV2)
        # the retry of the end that rotated the id is still recognised after the restart
        assert await context.txn.end_txn(TXN, pid, 32766, False, TV2) == (before.producer_id, 0)
    finally:
        await context.close()


def test_the_v1_record_round_trips_and_v0_stays_as_it_was():
    tv2 = TxnMetadata(TXN, 7, 3, 60000, TxnState.PREPARE_COMMIT, frozenset({("a", 0), ("a", 2), ("b", 1)}),
                      10, 20, previous_producer_id=5, next_producer_id=9, client_version=TV2)
    value = tv2.value_bytes()
    assert value[:2] == b"\x00\x01"
    restored = TxnMetadata.from_record(TXN, value)
    assert restored == tv2.__class__(**{**{f: getattr(tv2, f) for f in tv2.__slots__}, "last_producer_epoch": -1})
    tv1 = TxnMetadata(TXN, 7, 3, 60000, TxnState.EMPTY)
    assert tv1.value_bytes()[:2] == b"\x00\x00"
    assert TxnMetadata.from_record(TXN, tv1.value_bytes()) == tv1
