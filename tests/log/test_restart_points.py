"""Restart points written by their own thread (broker/log/restart_writer.py): the event loop takes
an index checkpoint's entries and a producer snapshot's bytes and queues them; whatever comes right
after (a roll, a topic deletion, a kill, a failed write) leaves files a restart reads correctly.

The writer thread is held up by a job that waits on a gate, so "right after" is deterministic: a
checkpoint or snapshot is queued and not yet written when the roll, deletion or kill happens."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.log import disk, restart_points
from weir.broker.log.index import OffsetIndex, TimeIndex
from weir.broker.log.manager import LogManager
from weir.broker.log.partition import Partition
from weir.broker.log.restart_writer import WRITER
from weir.broker.log.segment import Segment
from weir.protocol import records as rec

PRODUCER = 7
# as shipped, before the autouse fixture shrinks them
SHIPPED_CHECKPOINT = (restart_points.INDEX_CHECKPOINT_BYTES, restart_points.INDEX_CHECKPOINT_ENTRIES)
SHIPPED_SNAPSHOTS = (restart_points.PRODUCER_SNAPSHOT_INTERVAL, restart_points.PRODUCER_SNAPSHOT_BATCHES)


@pytest.fixture(autouse=True)
def small_restart_points(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(restart_points, "INDEX_CHECKPOINT_BYTES", 2000)
    monkeypatch.setattr(restart_points, "INDEX_CHECKPOINT_ENTRIES", 1)  # the bytes decide here
    monkeypatch.setattr(restart_points, "PRODUCER_SNAPSHOT_INTERVAL", 16)  # 16 a producer at least anyway
    monkeypatch.setattr(restart_points, "PRODUCER_SNAPSHOT_BATCHES", 1)  # the offsets decide here


@pytest.fixture
async def held_writer() -> AsyncIterator[threading.Event]:
    """The writer thread busy with another owner's job until the gate opens."""
    gate, started = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        gate.wait(30)
    WRITER.submit(object(), hold)
    assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
    try:
        yield gate
    finally:
        gate.set()
        assert await idle()


async def idle() -> bool:
    return await asyncio.get_running_loop().run_in_executor(None, WRITER.wait_idle, 10)


def open_partition(path: Path, verify: bool = True, **overrides: object) -> Partition:
    config = BrokerConfig().topic_defaults()
    config.update({"index.interval.bytes": 500, **overrides})
    partition = Partition("t", 0, path, config)
    partition.open(verify=verify)
    return partition


async def append(partition: Partition, value: bytes) -> int:
    sequence = partition.producers.producers[PRODUCER].last_seq + 1 if PRODUCER in partition.producers.producers \
        else 0
    batch = memoryview(rec.encode_batch([rec.Record(value, timestamp=1000 + sequence)], producer_id=PRODUCER,
                                        producer_epoch=0, base_sequence=sequence))
    return (await partition.append_client_batch(batch, rec.read_header(batch), 0)).base_offset


def read_values(partition: Partition) -> list[bytes]:
    """Every value in the log (a read stops at the end of a segment)."""
    values, offset = [], partition.log_start_offset
    while offset < partition.log_end_offset:
        read = partition.read(offset, 10**9)
        values += [r.value for _h, records in rec.decode_batches(read.records) for r in records]
        offset = read.end_offset
    return values


def on_disk(index: OffsetIndex | TimeIndex) -> tuple[list[int], list[int]]:
    loaded = type(index)(index.path, index.base_offset)
    assert loaded.load(), f"{index.path} missing, torn or out of order"
    return list(loaded.keys), list(loaded.values)


async def test_the_loop_queues_checkpoints_and_snapshots_and_the_thread_writes_them(tmp_path: Path,
                                                                                   held_writer: threading.Event):
    partition = open_partition(tmp_path)
    for i in range(17):
        await append(partition, bytes([i]) * 300)
    active = partition.active
    assert active.checkpointed_size > 0 and partition.producers.snapshot_offset == 16
    assert not Path(active.offset_index.path).exists(), "nothing written on the loop"
    assert partition.producers.snapshot_offsets() == []
    held_writer.set()
    assert await idle()
    keys = on_disk(active.offset_index)[0]
    assert keys and keys == list(active.offset_index.keys)[:len(keys)]
    assert partition.producers.snapshot_offsets() == [16]
    partition.close()


async def test_a_roll_right_after_a_checkpoint_was_queued_seals_whole_indexes(tmp_path: Path,
                                                                             held_writer: threading.Event):
    partition = open_partition(tmp_path, **{"segment.bytes": 6000})
    for i in range(10):  # ~3.4 KB: a checkpoint queued, no roll yet
        await append(partition, bytes([i]) * 300)
    assert len(partition.segments) == 1 and partition.active.checkpointed_size > 0
    for i in range(10, 40):  # rolls while the checkpoint is queued, then queues more for the new segments
        await append(partition, bytes([i]) * 300)
    assert len(partition.segments) >= 3
    held_writer.set()
    assert await idle()
    for sealed in partition.segments[:-1]:  # as sealed, with no stale checkpoint appended after the seal
        assert on_disk(sealed.offset_index) == (list(sealed.offset_index.keys), list(sealed.offset_index.values))
        assert on_disk(sealed.time_index) == (list(sealed.time_index.keys), list(sealed.time_index.values))
    partition.close()
    reopened = open_partition(tmp_path, verify=False, **{"segment.bytes": 6000})
    assert read_values(reopened) == [bytes([i]) * 300 for i in range(40)]
    assert reopened.producers.producers[PRODUCER].last_seq == 39
    reopened.close()


async def test_a_kill_right_after_restart_points_were_queued_restarts_from_the_older_ones(
        tmp_path: Path, held_writer: threading.Event):
    partition = open_partition(tmp_path)
    for i in range(17):
        await append(partition, bytes([i]) * 300)
    held_writer.set()
    assert await idle()  # checkpoints and the snapshot at 16 written
    checkpointed = on_disk(partition.active.offset_index)[0]
    gate = threading.Event()
    WRITER.submit(object(), lambda: gate.wait(30))
    for i in range(17, 40):
        await append(partition, bytes([i]) * 300)
    assert partition.producers.snapshot_offset == 32, "the snapshot at 32 queued"
    WRITER.discard(partition)  # kill -9: the queued writes never happen
    for segment in partition.segments:
        segment.release()
    gate.set()
    assert await idle()
    assert partition.producers.snapshot_offsets() == [16]
    assert on_disk(partition.active.offset_index)[0] == checkpointed
    reopened = open_partition(tmp_path, verify=False)  # the same boot: resumes from the checkpoint
    assert read_values(reopened) == [bytes([i]) * 300 for i in range(40)]
    assert reopened.producers.producers[PRODUCER].last_seq == 39, "replayed from the snapshot at 16"
    assert reopened.read(25, 1).records, "lookups through the resumed indexes"
    assert await append(reopened, b"after") == 40
    reopened.close()


async def test_a_topic_deleted_right_after_restart_points_were_queued_gets_none_of_them(
        tmp_path: Path, held_writer: threading.Event):
    logs = LogManager(tmp_path, BrokerConfig(), ManualClock())
    logs.open()
    partition = logs.create_topic("doomed", 1).partitions[0]
    for i in range(17):  # a checkpoint and a snapshot queued
        await append(partition, bytes([i]) * 300)
    directory = partition.directory
    await logs.delete_topic("doomed")
    held_writer.set()
    assert await idle()
    assert not directory.exists(), "no queued write recreated a file of the deleted partition"
    assert not disk.log_dir_of(tmp_path).offline and disk.log_dir_of(tmp_path).failures_total == 0
    again = logs.create_topic("doomed", 1).partitions[0]
    assert again.producers.snapshot_offsets() == [] and not list(again.directory.glob("*.index"))
    await logs.close()


async def test_a_failed_checkpoint_write_is_rewritten_whole_by_the_next(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch):
    rules = tmp_path / "faults"
    monkeypatch.setattr(disk, "_faults", disk.Faults(str(rules)))
    disk.register(tmp_path)
    partition = open_partition(tmp_path / "p")
    for i in range(8):
        await append(partition, bytes([i]) * 300)
    assert await idle()
    written = on_disk(partition.active.offset_index)[0]
    rules.write_text("EIO */*.index\n")
    for i in range(8, 16):
        await append(partition, bytes([i]) * 300)
    assert await idle()
    await asyncio.sleep(0)  # the failure reported to the loop (call_soon_threadsafe)
    assert on_disk(partition.active.offset_index)[0] == written, "the failed append was cut back"
    rules.unlink()
    for i in range(16, 24):
        await append(partition, bytes([i]) * 300)
    active = partition.active
    restart_points.checkpoint_indexes(partition, active)  # the last entries too
    assert await idle()
    assert on_disk(active.offset_index) == (list(active.offset_index.keys), list(active.offset_index.values))
    partition.close()
    assert disk.log_dir_of(tmp_path).failed_since is None, "writes succeeded again"


async def test_a_periodic_snapshot_fsyncs_the_aborts_it_stops_replaying_first(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch):
    order: list[str] = []
    real_fsync, real_replace = disk.fsync, disk.replace_file
    monkeypatch.setattr(disk, "fsync", lambda fd, path: (order.append(path.rsplit(".", 1)[-1]), real_fsync(fd, path)))
    monkeypatch.setattr(disk, "replace_file",
                        lambda path, data: (order.append(str(path).rsplit(".", 1)[-1]), real_replace(path, data)))
    partition = open_partition(tmp_path)
    batch = memoryview(rec.encode_batch([rec.Record(b"t")], producer_id=9, producer_epoch=0, base_sequence=0,
                                        transactional=True))
    await partition.append_client_batch(batch, rec.read_header(batch), 0, lambda _header: None)
    await partition.append_marker(9, 0, 0, False, 0)
    for i in range(40):  # two producers: a snapshot every 32 offsets
        await append(partition, bytes([i]) * 10)
    assert await idle()
    assert [kind for kind in order if kind in ("txnindex", "snapshot")][:2] == ["txnindex", "snapshot"], order
    partition.close()


async def test_index_checkpoints_follow_the_bytes_for_small_batches_and_the_entries_for_large_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Issue 33: ~1 MB batches (librdkafka's default) queued a checkpoint with every batch, a thread
    job per MB produced; now one per INDEX_CHECKPOINT_ENTRIES batches, while small batches still
    checkpoint every INDEX_CHECKPOINT_BYTES (they gain the entries first)."""
    every_bytes, every_entries = SHIPPED_CHECKPOINT
    monkeypatch.setattr(restart_points, "INDEX_CHECKPOINT_BYTES", every_bytes)
    monkeypatch.setattr(restart_points, "INDEX_CHECKPOINT_ENTRIES", every_entries)
    taken: list[int] = []
    real_checkpoint = restart_points.checkpoint_indexes
    monkeypatch.setattr(restart_points, "checkpoint_indexes",
                        lambda partition, segment: (taken.append(segment.size), real_checkpoint(partition, segment)))
    small = open_partition(tmp_path / "small", **{"index.interval.bytes": 4096})
    while small.active.size < 3 * every_bytes + 1000:
        await append(small, b"s" * 300)
    assert len(taken) == 3, taken
    gaps = [later - earlier for earlier, later in zip([0, *taken[:-1]], taken, strict=True)]
    assert gaps == [pytest.approx(every_bytes, abs=1000)] * 3
    small.close()

    taken.clear()
    large = open_partition(tmp_path / "large", **{"index.interval.bytes": 4096, "segment.bytes": 1 << 30})
    value = b"l" * every_bytes  # each batch alone past INDEX_CHECKPOINT_BYTES
    for _ in range(2 * every_entries + 3):
        await append(large, value)
    assert len(taken) == 2, f"one checkpoint per {every_entries} batches, not per batch: {len(taken)}"
    assert await idle()
    keys = on_disk(large.active.offset_index)[0]
    assert len(keys) == 2 * every_entries, "the checkpoints wrote the entries they took"
    for segment in large.segments:
        segment.release()  # kill -9: the 3 batches past the last checkpoint are walked at the restart
    resumed: list[int | None] = []
    real_resume = Segment.resume
    monkeypatch.setattr(Segment, "resume", lambda segment: (resumed.append(real_resume(segment)), resumed[-1])[1])
    reopened = open_partition(tmp_path / "large", verify=False, **{"index.interval.bytes": 4096,
                                                                   "segment.bytes": 1 << 30})
    assert resumed == [0], "resumed from the checkpoint (nothing cut), not recovered from the start"
    assert reopened.log_end_offset == 2 * every_entries + 3
    assert list(reopened.active.offset_index.keys) == list(range(2 * every_entries + 3))
    assert read_values(reopened)[-1] == value
    reopened.close()


async def test_producer_snapshots_follow_the_offsets_for_small_batches_and_the_batches_for_large_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Issue 33: an idempotent producer's ~1 MB batches of 1 KiB records passed the offset interval
    every two batches; now a snapshot waits for PRODUCER_SNAPSHOT_BATCHES batches as well."""
    every_offsets, every_batches = SHIPPED_SNAPSHOTS
    monkeypatch.setattr(restart_points, "PRODUCER_SNAPSHOT_INTERVAL", every_offsets)
    monkeypatch.setattr(restart_points, "PRODUCER_SNAPSHOT_BATCHES", every_batches)
    partition = open_partition(tmp_path, **{"segment.bytes": 1 << 30})
    taken: list[int] = []
    real_taken = partition.producers.snapshot_taken
    monkeypatch.setattr(partition.producers, "snapshot_taken",
                        lambda offset: (taken.append(offset), real_taken(offset))[1])
    for sequence in range(every_offsets + 1):  # one record a batch: the offsets decide
        batch = memoryview(rec.encode_batch([rec.Record(b"s")], producer_id=PRODUCER, producer_epoch=0,
                                            base_sequence=sequence))
        await partition.append_client_batch(batch, rec.read_header(batch), 0)
    assert taken == [every_offsets]
    records = every_offsets // 2  # two batches pass the offset interval
    sequence = every_offsets + 1
    for _ in range(every_batches + 1):
        batch = memoryview(rec.encode_batch([rec.Record(b"l")] * records, producer_id=PRODUCER,
                                            producer_epoch=0, base_sequence=sequence))
        await partition.append_client_batch(batch, rec.read_header(batch), 0)
        sequence += records
    # the small batch after the first snapshot counts: the large ones make up the rest
    assert taken == [every_offsets, every_offsets + 1 + (every_batches - 1) * records], \
        "one snapshot after PRODUCER_SNAPSHOT_BATCHES large batches, not one every two"
    assert await idle()
    assert partition.producers.snapshot_offsets()[-1] == taken[-1]
    partition.close()
