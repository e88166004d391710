"""Replay equivalence: the coordinators rebuilt from compacted internal topics hold the
same state as rebuilt from the whole history, from O(live state) records."""

from weir.broker.clock import ManualClock
from weir.broker.coordinator import snapshot as coordinator_snapshot
from weir.broker.coordinator.snapshot import SUFFIX as SNAPSHOT_SUFFIX
from weir.broker.group.admin import delete_group
from weir.broker.group.offsets import OffsetEntry
from weir.broker.log.cleaner import LogCleaner, is_compacted
from tests.group.test_coordinator import Members
from tests.txn.test_coordinator import make_context, settle

SMALL_SEGMENTS = {"offsets.topic.segment.bytes": 4096, "transaction.state.log.segment.bytes": 4096,
                  "group.initial.rebalance.delay.ms": 0}
DAY_MS = 86_400_000


def coordinator_state(ctx):
    """What replay rebuilds: transactional ids, committed and pending offsets, groups."""
    txns = {txn_id: (m.producer_id, m.producer_epoch, m.state, m.partitions, m.timeout_ms, m.start_ms)
            for txn_id, m in ctx.txn.txns.items()}
    committed = {group: dict(offsets) for group, offsets in ctx.offsets.committed.items()}
    pending = {pid: {group: dict(offsets) for group, offsets in groups.items()}
               for pid, groups in ctx.offsets.pending.items()}
    groups = {group_id: (g.generation, g.protocol_type, g.protocol_name, g.leader_id, g.state,
                         {mid: m.assignment for mid, m in g.members.items()})
              for group_id, g in ctx.groups.groups.items()}
    return txns, committed, pending, groups


def replayed_records(ctx):
    return sum(1 for log in (ctx.txn.log, ctx.offsets.log) for _entry in log.replay())


def drop_coordinator_snapshots(data_dir):
    """What compaction alone leaves to replay (coordinator/snapshot.py spares most of it)."""
    for path in data_dir.rglob("*" + SNAPSHOT_SUFFIX):
        path.unlink()


async def write_history(ctx, rounds):
    """Transactions (some aborted) with data and offsets, plain commits, a deleted group,
    a stable consumer group, and one transaction left open."""
    members = Members(ctx)
    await members.stable_group(1)
    ids = {}
    for txn_id in (f"txn-{i}" for i in range(6)):
        ids[txn_id] = await ctx.txn.init_producer_id(txn_id, 60000)
    for round_ in range(rounds):
        for i, (txn_id, (pid, epoch)) in enumerate(ids.items()):
            group = f"eos-{i % 3}"
            topic, index = ctx.txn.offsets_partition(group)
            ctx.offsets.log.partition(index)
            await ctx.txn.add_partitions(txn_id, pid, epoch, {(topic, index), ("data", i % 2)})
            await ctx.offsets.commit(group, {("data", i % 2): OffsetEntry(round_, -1, "", 1000)}, producer_id=pid,
                                     producer_epoch=epoch, verify_txn=ctx.txn.verifier(txn_id, topic, index))
            await ctx.txn.end_txn(txn_id, pid, epoch, commit=(round_ + i) % 5 != 0)
            await settle(ctx)
        for g in range(4):
            await ctx.offsets.commit(f"plain-{g}", {("data", p): OffsetEntry(round_ * 10 + p, -1, "m", 1000)
                                                    for p in range(2)})
    await delete_group(ctx.groups, "plain-3")
    pid, epoch = ids["txn-0"]
    topic, index = ctx.txn.offsets_partition("eos-0")
    await ctx.txn.add_partitions("txn-0", pid, epoch, {(topic, index)})
    await ctx.offsets.commit("eos-0", {("data", 0): OffsetEntry(999, -1, "", 1000)}, producer_id=pid,
                             producer_epoch=epoch, verify_txn=ctx.txn.verifier("txn-0", topic, index))


async def compact_internal_topics(ctx, passes=4):
    """Pass after pass, a day apart, so tombstones and markers pass their delete horizon."""
    clock = ManualClock(ctx.clock.now_ms())
    cleaner = LogCleaner(ctx.data_dir, ctx.config, clock, ctx.logs.all_partitions)
    for _ in range(passes):
        for partition in list(ctx.logs.all_partitions()):
            if is_compacted(partition):
                target = cleaner.log_to_clean(partition, clock.now_ms())
                target.first_dirty = partition.log_start_offset
                if target.first_uncleanable > partition.log_start_offset:
                    await cleaner.clean(target)
        clock.advance(DAY_MS + 1)


async def test_state_after_compaction_and_restart_equals_the_state_from_the_full_log(tmp_path):
    ctx = make_context(tmp_path, **SMALL_SEGMENTS)
    await write_history(ctx, rounds=25)
    live = coordinator_state(ctx)
    await ctx.close()
    drop_coordinator_snapshots(tmp_path)

    full = make_context(tmp_path, **SMALL_SEGMENTS)
    from_history = coordinator_state(full)
    history_records = replayed_records(full)
    assert from_history[:3] == live[:3], "replay of the whole log rebuilds the live state"
    await compact_internal_topics(full)
    await full.close()

    compacted = make_context(tmp_path, **SMALL_SEGMENTS)
    try:
        assert coordinator_state(compacted) == from_history
        assert compacted.offsets.pending, "the open transaction's offsets are still pending"
        live_records = replayed_records(compacted)
        assert live_records * 5 < history_records, (live_records, history_records)
    finally:
        await compacted.close()


async def test_replay_after_compaction_follows_the_live_state_not_the_history(tmp_path):
    """Three times the history, about the same replay: restart cost is O(live state)."""
    counts = {}
    for rounds in (10, 30):
        ctx = make_context(tmp_path / str(rounds), **SMALL_SEGMENTS)
        await write_history(ctx, rounds=rounds)
        drop_coordinator_snapshots(tmp_path / str(rounds))
        history = replayed_records(ctx)
        await compact_internal_topics(ctx)
        await ctx.close()
        drop_coordinator_snapshots(tmp_path / str(rounds))
        reopened = make_context(tmp_path / str(rounds), **SMALL_SEGMENTS)
        counts[rounds] = (history, replayed_records(reopened))
        await reopened.close()
    (short_history, short_live), (long_history, long_live) = counts[10], counts[30]
    assert long_history > 2.5 * short_history
    # what is left: one record per key, plus the active segments (4 KiB each) nobody cleans
    assert long_live < 1.3 * short_live, counts


async def test_a_restart_from_coordinator_snapshots_rebuilds_the_state_of_the_full_log(tmp_path, monkeypatch):
    """After a clean stop and after a kill (snapshots written along the way, then the log's tail),
    the coordinators hold what the whole log gives, from about the live state's records."""
    monkeypatch.setattr(coordinator_snapshot, "MIN_INTERVAL", 20)  # a snapshot every few transactions here
    ctx = make_context(tmp_path, **SMALL_SEGMENTS)
    await write_history(ctx, rounds=60)
    live = coordinator_state(ctx)
    assert list(tmp_path.rglob("*" + SNAPSHOT_SUFFIX)), "snapshots written as the history grew"
    for partition in ctx.logs.all_partitions():  # a kill: no close, no shutdown snapshot
        for segment in partition.segments:
            segment.release()
    killed = make_context(tmp_path, **SMALL_SEGMENTS)
    try:
        after_kill_state = coordinator_state(killed)
        after_kill = replayed_records(killed)
    finally:
        await killed.close()
    clean = make_context(tmp_path, **SMALL_SEGMENTS)
    try:
        after_clean_stop_state = coordinator_state(clean)
        after_clean_stop = replayed_records(clean)
    finally:
        await clean.close()
    drop_coordinator_snapshots(tmp_path)
    full = make_context(tmp_path, **SMALL_SEGMENTS)
    try:
        from_history = coordinator_state(full)
        history = replayed_records(full)
    finally:
        await full.close()
    assert from_history[:3] == live[:3]  # groups replayed are not the live ones (members rejoin)
    assert after_kill_state == from_history
    assert after_clean_stop_state == from_history
    assert after_clean_stop <= after_kill < history / 3, (after_clean_stop, after_kill, history)
