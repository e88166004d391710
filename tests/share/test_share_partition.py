"""One share-partition on a real log with a manual clock: acquisition, delivery counts, locks,
the in-flight limit, the delivery limit, acknowledgements all or none, RENEW, and the record
state table swept state by state."""

import pytest

from weir.broker.clock import ManualClock
from weir.broker.share import records
from weir.broker.share.in_flight import Limits
from weir.broker.share.partition import SharePartition, split_ranges
from weir.broker.share.record_state import TRANSITIONS, RecordState, check_transition
from weir.protocol import records as rec
from weir.protocol.errors import Errors, KafkaError
from tests.txn.test_coordinator import make_context

ACCEPT, RELEASE, REJECT, RENEW, GAP = 1, 2, 3, 4, 0
LIMITS = Limits(lock_ms=30_000, delivery_limit=3, max_in_flight=100)


@pytest.fixture
def context(tmp_path):
    return make_context(tmp_path, ManualClock())


async def append(context, count, *, per_batch=1):
    partition = context.logs.partition("data", 0)
    for start in range(0, count, per_batch):
        batch = rec.encode_batch([rec.Record(b"v%d" % i, timestamp=1)
                                  for i in range(start, min(count, start + per_batch))])
        await partition.append_client_batch(memoryview(batch), rec.read_header(batch), 0)
    return partition


def share_partition(context, partition, start=0):
    woken = []
    sp = SharePartition(("g", b"t" * 16, 0), partition, start, context.clock, lambda: woken.append(1))
    return sp, woken


def acknowledged(sp, member, batches, limits):
    """Acknowledge and commit, as a successful state write does."""
    if (change := sp.acknowledge(member, batches, limits)) is not None:
        sp.commit(change)


def released(sp, member, limits):
    if (change := sp.release_member(member, limits)) is not None:
        sp.commit(change)


def state(sp):
    return {offset: (r.state, r.delivery_count) for offset, r in sp.in_flight.items()}


@pytest.mark.parametrize("current", list(RecordState))
@pytest.mark.parametrize("target", list(RecordState))
def test_record_state_table(current, target):
    if target in TRANSITIONS[current]:
        check_transition(current, target)
    else:
        with pytest.raises(KafkaError) as caught:
            check_transition(current, target)
        assert caught.value.error == Errors.INVALID_RECORD_STATE


async def test_acquire_takes_new_records_once_and_accept_moves_the_start(context):
    sp, _ = share_partition(context, await append(context, 5, per_batch=2))
    first = sp.acquire("a", 3, LIMITS, strict=True)
    assert (first.ranges, sp.start_offset, sp.end_offset) == ([(0, 2, 1)], 0, 3)
    assert sp.acquire("b", 10, LIMITS, strict=True).ranges == [(3, 4, 1)]  # nothing twice
    acknowledged(sp, "a", [(0, 2, [ACCEPT])], LIMITS)
    assert (sp.start_offset, list(sp.in_flight)) == (3, [3, 4])
    records = sp.records_for(first, LIMITS)
    assert [h.base_offset for _, h in rec.iter_headers(records)] == [0, 2]  # the batches holding 0-2


async def test_batch_mode_takes_whole_batches_and_record_limit_mode_cuts(context):
    partition = await append(context, 6, per_batch=3)
    sp, _ = share_partition(context, partition)
    assert sp.acquire("a", 2, LIMITS, strict=False).ranges == [(0, 2, 1)]
    assert sp.acquire("b", 2, LIMITS, strict=True).ranges == [(3, 4, 1)]
    assert sp.end_offset == 5


async def test_release_comes_back_with_the_count_raised_and_the_limit_archives(context):
    sp, woken = share_partition(context, await append(context, 1))
    for delivery in (1, 2, 3):
        assert sp.acquire("a", 10, LIMITS, strict=True).ranges == [(0, 0, delivery)]
        acknowledged(sp, "a", [(0, 0, [RELEASE])], LIMITS)
    # the third release archived it: nothing came back, but the start moved past it (room in the
    # in-flight window), which wakes waiting fetches too, as Kafka's written state change does
    assert woken == [1, 1, 1]
    assert (sp.in_flight, sp.start_offset) == ({}, 1)
    assert sp.acquire("a", 10, LIMITS, strict=True).ranges == []


async def test_an_accept_moving_the_start_wakes_waiting_fetches(context):
    sp, woken = share_partition(context, await append(context, 2))
    sp.acquire("a", 10, LIMITS, strict=True)
    acknowledged(sp, "a", [(0, 1, [ACCEPT])], LIMITS)
    assert sp.start_offset == 2 and woken == [1]  # room in the in-flight window: waiting fetches try again


async def test_reject_archives_and_gap_too(context):
    sp, _ = share_partition(context, await append(context, 3))
    sp.acquire("a", 10, LIMITS, strict=True)
    acknowledged(sp, "a", [(0, 1, [REJECT, GAP]), (2, 2, [ACCEPT])], LIMITS)
    assert (sp.in_flight, sp.start_offset) == ({}, 3)


async def test_a_lock_expiring_gives_the_records_back(context):
    sp, woken = share_partition(context, await append(context, 2))
    sp.acquire("a", 10, LIMITS, strict=True)
    context.clock.advance(LIMITS.lock_ms - 1)
    assert state(sp) == {0: (RecordState.ACQUIRED, 1), 1: (RecordState.ACQUIRED, 1)}
    context.clock.advance(1)
    assert state(sp) == {0: (RecordState.AVAILABLE, 1), 1: (RecordState.AVAILABLE, 1)} and woken == [1]
    assert sp.acquire("b", 10, LIMITS, strict=True).ranges == [(0, 1, 2)]
    with pytest.raises(KafkaError) as caught:  # the lock is b's now
        acknowledged(sp, "a", [(0, 0, [ACCEPT])], LIMITS)
    assert caught.value.error == Errors.INVALID_RECORD_STATE


async def test_acknowledgements_apply_all_or_none(context):
    sp, _ = share_partition(context, await append(context, 4))
    sp.acquire("a", 2, LIMITS, strict=True)
    sp.acquire("b", 2, LIMITS, strict=True)
    before = state(sp)
    with pytest.raises(KafkaError) as caught:
        acknowledged(sp, "a", [(0, 1, [ACCEPT]), (2, 2, [ACCEPT])], LIMITS)  # 2 is b's
    assert caught.value.error == Errors.INVALID_RECORD_STATE
    assert state(sp) == before
    with pytest.raises(KafkaError):
        acknowledged(sp, "a", [(9, 9, [ACCEPT])], LIMITS)  # never acquired


async def test_renew_restarts_the_lock(context):
    sp, _ = share_partition(context, await append(context, 1))
    sp.acquire("a", 10, LIMITS, strict=True)
    context.clock.advance(20_000)
    acknowledged(sp, "a", [(0, 0, [RENEW])], LIMITS)
    context.clock.advance(20_000)  # past the first lock, within the renewed one
    assert state(sp) == {0: (RecordState.ACQUIRED, 1)}
    context.clock.advance(10_000)
    assert state(sp) == {0: (RecordState.AVAILABLE, 1)}


async def test_the_in_flight_limit_bounds_new_records_not_released_ones(context):
    sp, _ = share_partition(context, await append(context, 10))
    limits = Limits(lock_ms=30_000, delivery_limit=5, max_in_flight=4)
    assert sp.acquire("a", 10, limits, strict=True).ranges == [(0, 3, 1)]
    assert sp.acquire("b", 10, limits, strict=True).ranges == []
    acknowledged(sp, "a", [(0, 0, [RELEASE]), (1, 1, [ACCEPT])], limits)
    assert sp.acquire("b", 10, limits, strict=True).ranges == [(0, 0, 2)]  # the window is still 0-3
    acknowledged(sp, "b", [(0, 0, [ACCEPT])], limits)  # the start moves to 2: room for two
    assert sp.acquire("b", 10, limits, strict=True).ranges == [(4, 5, 1)]


async def test_a_member_leaving_gives_back_what_it_holds(context):
    sp, _ = share_partition(context, await append(context, 3))
    sp.acquire("a", 2, LIMITS, strict=True)
    sp.acquire("b", 1, LIMITS, strict=True)
    released(sp, "a", LIMITS)
    assert state(sp) == {0: (RecordState.AVAILABLE, 1), 1: (RecordState.AVAILABLE, 1),
                         2: (RecordState.ACQUIRED, 1)}


async def test_latest_start_skips_what_was_there(context):
    partition = await append(context, 3)
    sp, _ = share_partition(context, partition, start=partition.log_end_offset)
    assert sp.acquire("a", 10, LIMITS, strict=True).ranges == []
    await append(context, 1)
    assert sp.acquire("a", 10, LIMITS, strict=True).ranges == [(3, 3, 1)]


async def put_txn(partition, pid, count):
    batch = rec.encode_batch([rec.Record(b"t", timestamp=1) for _ in range(count)], producer_id=pid,
                             producer_epoch=0, base_sequence=0, transactional=True)
    await partition.append_client_batch(memoryview(batch), rec.read_header(batch), 0, lambda _header: None)


async def test_read_committed_stops_at_the_lso_and_archives_aborted_records(context):
    partition = await append(context, 1)                      # 0
    await put_txn(partition, 7, 2)                            # 1-2 aborted
    await partition.append_marker(7, 0, 0, False, 1)          # 3
    await put_txn(partition, 8, 1)                            # 4 committed
    await partition.append_marker(8, 0, 0, True, 1)           # 5
    await put_txn(partition, 9, 1)                            # 6 still open: the LSO
    committed = Limits(lock_ms=30_000, delivery_limit=5, max_in_flight=100, read_committed=True)
    sp, _ = share_partition(context, partition)
    taken = sp.acquire("a", 100, committed, strict=True)
    assert (taken.ranges, sp.end_offset) == ([(0, 0, 1), (4, 4, 1)], 6)
    acknowledged(sp, "a", [(0, 0, [ACCEPT]), (4, 4, [ACCEPT])], committed)
    assert (sp.start_offset, sp.in_flight) == (6, {})
    uncommitted, _ = share_partition(context, partition)
    assert uncommitted.acquire("a", 100, LIMITS, strict=True).ranges == [(0, 2, 1), (4, 4, 1), (6, 6, 1)]


async def test_the_stored_state_restores_the_same_share_partition(context):
    sp, _ = share_partition(context, await append(context, 8))
    sp.acquire("a", 3, LIMITS, strict=True)
    sp.acquire("b", 3, LIMITS, strict=True)
    acknowledged(sp, "a", [(0, 0, [ACCEPT]), (1, 1, [RELEASE]), (2, 2, [REJECT])], LIMITS)
    acknowledged(sp, "b", [(4, 4, [ACCEPT])], LIMITS)
    stored = sp.stored_state()
    assert (stored.start_offset, stored.batches) == (1, [(1, 1, 0, 1), (2, 2, 4, 1), (3, 3, 0, 1), (4, 4, 2, 1),
                                                         (5, 5, 0, 1)])
    key, value = records.encode(*sp.key, stored, 0)
    where, decoded = records.decode(key, value, lambda _where: None)
    restored, _ = share_partition(context, sp.log, start=decoded.start_offset)
    restored.restore(decoded)
    assert (where, restored.start_offset, restored.end_offset, restored.stored_state().batches) == (
        sp.key, 1, 6, stored.batches)
    # held records come back after a restart, their delivery counted; done ones never
    assert restored.acquire("c", 10, LIMITS, strict=True).ranges == [(1, 1, 2), (3, 3, 2), (5, 5, 2), (6, 7, 1)]


async def test_redelivery_is_throttled_and_a_last_delivery_goes_alone(context):
    sp, _ = share_partition(context, await append(context, 8, per_batch=8))
    limits = Limits(lock_ms=30_000, delivery_limit=5, max_in_flight=100)  # throttled from 3 deliveries on
    fetches = []
    for _ in range(10):
        taken = sp.acquire("a", 100, limits, strict=False).ranges
        fetches.append(taken)
        acknowledged(sp, "a", [(first, last, [RELEASE]) for first, last, _ in taken], limits)
    assert fetches == [[(0, 7, 1)], [(0, 7, 2)], [(0, 7, 3)], [(0, 3, 4)], [(0, 0, 5)], [(1, 1, 5)], [(2, 2, 5)],
                       [(3, 3, 5)], [(4, 7, 4)], [(4, 4, 5)]]


async def test_max_bytes_takes_at_least_one_batch_and_whole_batches_within_it(context):
    partition = await append(context, 6, per_batch=2)
    sp, _ = share_partition(context, partition)
    assert sp.acquire("a", 100, LIMITS, strict=False, max_bytes=1).ranges == [(0, 1, 1)]
    batch_bytes = len(partition.read(2, 1 << 20, min_one=True).records) // 2  # two batches of equal size
    assert sp.acquire("a", 100, LIMITS, strict=False, max_bytes=2 * batch_bytes).ranges == [(2, 5, 1)]


def test_acquired_ranges_are_cut_at_batch_boundaries_into_batch_size_pieces():
    batches = b"".join(rec.encode_batch([rec.Record(b"v", timestamp=1)] * 5, base_offset=base)
                       for base in range(0, 20, 5))
    assert split_ranges([(0, 19, 1)], batches, 10) == [(0, 9, 1), (10, 19, 1)]
    assert split_ranges([(0, 19, 1)], batches, 3) == [(0, 4, 1), (5, 9, 1), (10, 14, 1), (15, 19, 1)]
    assert split_ranges([(0, 12, 2)], batches, 10) == [(0, 9, 2), (10, 12, 2)]  # record-limit mode ends inside one
    assert split_ranges([(0, 19, 1)], batches, 0) == [(0, 19, 1)]
