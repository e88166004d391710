"""The transaction coordinator against a real log store in a tmp dir, on a manual clock."""

import asyncio

import pytest

from weir.broker.log import partition_txns
from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.context import BrokerContext
from weir.broker.txn.state import TxnState
from weir.protocol import records as rec
from weir.protocol.errors import Errors, KafkaError

TXN = "txn-a"


def make_context(path, clock=None, **settings):
    config = BrokerConfig({"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
                           **{k: str(v) for k, v in settings.items()}})
    context = BrokerContext(config, path, "127.0.0.1", 9092, clock or ManualClock())
    context.open()
    if "data" not in context.logs.topics:
        context.logs.create_topic("data", 2)
    return context


async def code_of(awaitable):
    try:
        await awaitable
    except KafkaError as exc:
        return exc.code
    return Errors.NONE


async def produce(context, pid, epoch, index, value, seq=0):
    partition = context.logs.partition("data", index)
    batch = memoryview(rec.encode_batch([rec.Record(value, timestamp=1)], producer_id=pid, producer_epoch=epoch,
                                        base_sequence=seq, transactional=True))
    await partition.append_client_batch(batch, rec.read_header(batch), 0, context.txn.verifier(TXN, "data", index))


async def settle(context):
    """Let completion tasks (markers, Complete records) finish."""
    while context.txn._completions:
        await asyncio.wait(list(context.txn._completions.values()))


@pytest.fixture
async def ctx(tmp_path):
    context = make_context(tmp_path)
    yield context
    await context.close()


async def test_new_id_gets_epoch_zero_and_reinit_bumps(ctx):
    pid, epoch = await ctx.txn.init_producer_id(TXN, 60000)
    assert epoch == 0
    assert await ctx.txn.init_producer_id(TXN, 60000) == (pid, 1)
    assert ctx.txn.txns[TXN].state == TxnState.EMPTY


@pytest.mark.parametrize("txn_id, timeout, code", [
    ("", 1000, Errors.INVALID_REQUEST),
    (TXN, 0, Errors.INVALID_TRANSACTION_TIMEOUT),
    (TXN, 900001, Errors.INVALID_TRANSACTION_TIMEOUT),
])
async def test_init_rejects_bad_arguments(ctx, txn_id, timeout, code):
    assert await code_of(ctx.txn.init_producer_id(txn_id, timeout)) == code


async def test_commit_writes_markers_everywhere_then_completes(ctx):
    pid, epoch = await ctx.txn.init_producer_id(TXN, 60000)
    await ctx.txn.add_partitions(TXN, pid, epoch, {("data", 0), ("data", 1)})
    await produce(ctx, pid, epoch, 0, b"x")
    await produce(ctx, pid, epoch, 1, b"y")
    assert ctx.logs.partition("data", 0).last_stable_offset == 0
    await ctx.txn.end_txn(TXN, pid, epoch, True)
    assert ctx.txn.txns[TXN].state == TxnState.PREPARE_COMMIT  # answered before the markers
    await settle(ctx)
    assert ctx.txn.txns[TXN].state == TxnState.COMPLETE_COMMIT and not ctx.txn.txns[TXN].partitions
    for index in (0, 1):
        partition = ctx.logs.partition("data", index)
        assert partition.last_stable_offset == partition.high_watermark == 2
    assert await code_of(ctx.txn.end_txn(TXN, pid, epoch, True)) == Errors.NONE  # a retry
    assert await code_of(ctx.txn.end_txn(TXN, pid, epoch, False)) == Errors.INVALID_TXN_STATE


async def test_every_state_answers_each_request_as_kafka_does(ctx):
    """Empty, Ongoing, CompleteCommit, CompleteAbort x AddPartitions / EndTxn(commit) / EndTxn(abort)."""
    pid, epoch = await ctx.txn.init_producer_id(TXN, 60000)
    part = {("data", 0)}
    expected = {
        TxnState.EMPTY: (Errors.NONE, Errors.INVALID_TXN_STATE, Errors.INVALID_TXN_STATE),
        TxnState.ONGOING: (Errors.NONE, Errors.NONE, Errors.NONE),
        TxnState.COMPLETE_COMMIT: (Errors.NONE, Errors.NONE, Errors.INVALID_TXN_STATE),
        TxnState.COMPLETE_ABORT: (Errors.NONE, Errors.INVALID_TXN_STATE, Errors.NONE),
    }

    async def reach(state):
        _pid, e = await ctx.txn.init_producer_id(TXN, 60000)
        if state != TxnState.EMPTY:
            await ctx.txn.add_partitions(TXN, pid, e, part)
        if state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            await ctx.txn.end_txn(TXN, pid, e, state == TxnState.COMPLETE_COMMIT)
            await settle(ctx)
        assert ctx.txn.txns[TXN].state == state
        return e

    for state, (add, commit, abort) in expected.items():
        e = await reach(state)
        assert await code_of(ctx.txn.add_partitions(TXN, pid, e, part)) == add, state
        e = await reach(state)
        assert await code_of(ctx.txn.end_txn(TXN, pid, e, True)) == commit, state
        await settle(ctx)
        e = await reach(state)
        assert await code_of(ctx.txn.end_txn(TXN, pid, e, False)) == abort, state
        await settle(ctx)
        e = await reach(state)
        assert await code_of(ctx.txn.add_partitions(TXN, pid + 1, e, part)) == Errors.INVALID_PRODUCER_ID_MAPPING
        assert await code_of(ctx.txn.end_txn(TXN, pid, e - 1, True)) == Errors.PRODUCER_FENCED
        assert await code_of(ctx.txn.end_txn("unknown", pid, e, True)) == Errors.INVALID_PRODUCER_ID_MAPPING


async def test_a_pending_write_makes_others_wait_with_concurrent_transactions(ctx):
    pid, epoch = await ctx.txn.init_producer_id(TXN, 60000)
    ctx.txn._pending[TXN] = TxnState.ONGOING  # as during a record write in flight
    assert await code_of(ctx.txn.add_partitions(TXN, pid, epoch, {("data", 0)})) == Errors.CONCURRENT_TRANSACTIONS
    assert await code_of(ctx.txn.init_producer_id(TXN, 60000)) == Errors.CONCURRENT_TRANSACTIONS
    del ctx.txn._pending[TXN]


async def test_reinit_fences_the_zombie_and_aborts_its_transaction(ctx):
    pid, epoch = await ctx.txn.init_producer_id(TXN, 60000)
    await ctx.txn.add_partitions(TXN, pid, epoch, {("data", 0)})
    await produce(ctx, pid, epoch, 0, b"zombie")
    new_pid, new_epoch = await ctx.txn.init_producer_id(TXN, 60000)
    assert (new_pid, new_epoch) == (pid, epoch + 2)  # +1 fences and aborts, +1 for the new producer
    partition = ctx.logs.partition("data", 0)
    assert partition.last_stable_offset == partition.high_watermark
    [aborted] = partition_txns.aborted_between(partition, 0, partition.high_watermark)
    assert aborted.producer_id == pid
    assert await code_of(ctx.txn.add_partitions(TXN, pid, epoch, {("data", 0)})) == Errors.PRODUCER_FENCED
    assert await code_of(produce(ctx, pid, epoch, 0, b"late", seq=1)) == Errors.INVALID_PRODUCER_EPOCH


async def test_kip360_recovery_with_the_current_id_and_epoch(ctx):
    pid, epoch = await ctx.txn.init_producer_id(TXN, 60000)
    assert await ctx.txn.init_producer_id(TXN, 60000, pid, epoch) == (pid, epoch + 1)
    assert await ctx.txn.init_producer_id(TXN, 60000, pid, epoch) == (pid, epoch + 1)  # a retry: no second bump
    assert await code_of(ctx.txn.init_producer_id(TXN, 60000, pid + 99, 0)) == Errors.PRODUCER_FENCED
    assert await code_of(ctx.txn.init_producer_id(TXN, 60000, pid, epoch + 7)) == Errors.PRODUCER_FENCED


async def test_epoch_exhaustion_rotates_to_a_new_producer_id(ctx):
    pid, _epoch = await ctx.txn.init_producer_id(TXN, 60000)
    ctx.txn.replay(TXN, ctx.txn.txns[TXN].transition_to(TxnState.EMPTY, producer_epoch=32766))
    new_pid, new_epoch = await ctx.txn.init_producer_id(TXN, 60000)
    assert new_pid != pid and new_epoch == 0


async def test_timed_out_transaction_is_fenced_and_aborted(tmp_path):
    clock = ManualClock()
    context = make_context(tmp_path, clock)
    try:
        pid, epoch = await context.txn.init_producer_id(TXN, 5000)
        await context.txn.add_partitions(TXN, pid, epoch, {("data", 0)})
        await produce(context, pid, epoch, 0, b"stalled")
        clock.advance(4000)
        assert await context.txn.abort_timed_out() == 0
        clock.advance(2000)
        assert await context.txn.abort_timed_out() == 1
        await settle(context)
        metadata = context.txn.txns[TXN]
        assert (metadata.state, metadata.producer_epoch) == (TxnState.COMPLETE_ABORT, epoch + 1)
        partition = context.logs.partition("data", 0)
        assert partition.last_stable_offset == partition.high_watermark
        assert await code_of(context.txn.end_txn(TXN, pid, epoch, True)) == Errors.PRODUCER_FENCED
    finally:
        await context.close()


async def test_background_job_aborts_on_its_interval(tmp_path):
    clock = ManualClock()
    context = make_context(tmp_path, clock, **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000})
    context.start_background_jobs()
    try:
        pid, epoch = await context.txn.init_producer_id(TXN, 1500)
        await context.txn.add_partitions(TXN, pid, epoch, {("data", 0)})
        for _ in range(3):
            clock.advance(1000)
            await asyncio.sleep(0)
        for _ in range(100):
            if context.txn.txns[TXN].state == TxnState.COMPLETE_ABORT:
                break
            await asyncio.sleep(0.01)
        assert context.txn.txns[TXN].state == TxnState.COMPLETE_ABORT
    finally:
        await context.close()


async def test_idle_ids_expire_with_a_tombstone_that_replay_honours(tmp_path):
    clock = ManualClock()
    context = make_context(tmp_path, clock, **{"transactional.id.expiration.ms": 10000})
    pid, _ = await context.txn.init_producer_id(TXN, 1000)
    await context.txn.init_producer_id("busy", 60000)
    p2, e2 = context.txn.txns["busy"].producer_id, context.txn.txns["busy"].producer_epoch
    await context.txn.add_partitions("busy", p2, e2, {("data", 1)})  # Ongoing ids never expire
    clock.advance(10001)
    assert await context.txn.expire_transactional_ids() == 1
    assert TXN not in context.txn.txns and "busy" in context.txn.txns
    await context.close()
    reopened = make_context(tmp_path, clock)
    try:
        assert TXN not in reopened.txn.txns
        new_pid, epoch = await reopened.txn.init_producer_id(TXN, 1000)
        assert new_pid != pid and epoch == 0
    finally:
        await reopened.close()


async def test_replay_rebuilds_the_same_state(tmp_path):
    context = make_context(tmp_path)
    pid, epoch = await context.txn.init_producer_id(TXN, 60000)
    await context.txn.add_partitions(TXN, pid, epoch, {("data", 0), ("data", 1)})
    await context.txn.init_producer_id("other", 30000)
    live = {k: (v.producer_id, v.producer_epoch, v.timeout_ms, v.state, v.partitions, v.start_ms, v.last_update_ms)
            for k, v in context.txn.txns.items()}
    await context.close()
    reopened = make_context(tmp_path)
    try:
        replayed = {k: (v.producer_id, v.producer_epoch, v.timeout_ms, v.state, v.partitions, v.start_ms,
                        v.last_update_ms) for k, v in reopened.txn.txns.items()}
        assert replayed == live
    finally:
        await reopened.close()


async def test_restart_completes_a_prepared_commit(tmp_path):
    context = make_context(tmp_path)
    pid, epoch = await context.txn.init_producer_id(TXN, 60000)
    await context.txn.add_partitions(TXN, pid, epoch, {("data", 0)})
    await produce(context, pid, epoch, 0, b"x")
    # PrepareCommit is durable but the broker dies before any marker is written
    await context.txn._persist(context.txn.txns[TXN].transition_to(TxnState.PREPARE_COMMIT))
    await context.close()
    reopened = make_context(tmp_path)
    try:
        partition = reopened.logs.partition("data", 0)
        assert partition.last_stable_offset == 0
        reopened.start_background_jobs()
        await settle(reopened)
        assert reopened.txn.txns[TXN].state == TxnState.COMPLETE_COMMIT
        assert partition.last_stable_offset == partition.high_watermark == 2
        assert partition_txns.aborted_between(partition, 0, 2) == []
    finally:
        await reopened.close()
