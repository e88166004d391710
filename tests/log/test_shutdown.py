"""Shutdown and restart of the log store. Clean shutdown writes only what changed, in as few files as it can:
one producer-state-checkpoint with the state of each partition whose producer state changed since its
newest snapshot (not a file each), the active segment's new index entries when there are many; then one
syncfs makes them and every segment written since its last flush durable, where a file creation and an
fsync per file cost 1.4-3 ms each on a loaded VM (3,000 written partitions: over 4 s).
Counted through the disk layer (every write goes through it), not timed."""

import asyncio
from collections import Counter

import pytest

from weir.broker.log import partition_txns
from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.log import disk, producer_checkpoint
from weir.broker.log.manager import LogManager
from weir.broker.log.restart_writer import WRITER
from weir.protocol import records as rec

PARTITIONS = 1000  # the count written scales with the partitions changed, not with these


@pytest.fixture
def writes(monkeypatch):
    counted: Counter = Counter()
    for name in ("replace_durably", "fsync", "write_file", "append_file", "fsync_directory", "sync_filesystem"):
        real = getattr(disk, name)

        def counting(*args, _real=real, _name=name, **kwargs):
            path = str(args[1] if _name == "fsync" else args[0])
            kind = {"fsync_directory": "directory", "sync_filesystem": "filesystem"}.get(_name)
            counted[(_name, kind or path.rsplit(".", 1)[-1])] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(disk, name, counting)
    return counted


def open_logs(path) -> LogManager:
    logs = LogManager(path, BrokerConfig({"max.broker.partitions": str(PARTITIONS + 100)}), ManualClock())
    logs.open()
    return logs


async def written_in_background() -> bool:
    """The restart points queued so far are on disk (their thread wrote them)."""
    return await asyncio.get_running_loop().run_in_executor(None, WRITER.wait_idle, 10)


async def append(partition, producer_id=rec.NO_PRODUCER_ID):
    sequence = partition.log_end_offset if producer_id >= 0 else rec.NO_SEQUENCE
    batch = rec.encode_batch([rec.Record(b"v")], producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                             base_sequence=sequence)
    await partition.append_client_batch(memoryview(batch), rec.read_header(batch), 0)


async def test_a_clean_shutdown_writes_snapshots_only_for_changed_producer_state(tmp_path, writes):
    logs = open_logs(tmp_path)
    partitions = logs.create_topic("wide", PARTITIONS).partitions
    for partition in partitions[:300]:
        await append(partition)  # no producer id: the producer state stays as it was
    for partition in partitions[300:330]:
        await append(partition, producer_id=7)
    writes.clear()
    await logs.close()
    # one checkpoint file for the 30 changed producer states (replace_file: a .tmp renamed), no index
    # checkpoint for a tail this small, then one sync of the filesystem for it and the 330 segments
    # (and the directories their first write made)
    assert writes == {("write_file", "tmp"): 1, ("sync_filesystem", "filesystem"): 1}
    topic_id = logs.topics["wide"].topic_id
    assert {(key, offset) for key, (offset, _) in producer_checkpoint.load(tmp_path).items()} \
        == {((topic_id, i), 1) for i in range(300, 330)}

    logs = open_logs(tmp_path)
    partitions = logs.topics["wide"].partitions
    assert [p.log_end_offset for p in partitions[299:331]] == [1] * 31 + [0]
    assert [p.producers.snapshot_offset for p in partitions[299:331]] == [-1] + [1] * 30 + [-1], \
        "the state as the checkpoint saved it, nothing replayed"
    assert all(p.producers.producers[7].last_seq == 0 for p in partitions[300:330])
    writes.clear()
    await logs.close()
    assert writes == {("sync_filesystem", "filesystem"): 1}, "nothing changed since the last start: nothing written"

    logs = open_logs(tmp_path)
    for partition in logs.topics["wide"].partitions[320:340]:
        await append(partition, producer_id=8)
    writes.clear()
    await logs.close()
    assert writes == {("write_file", "tmp"): 1, ("sync_filesystem", "filesystem"): 1}
    # 300-319 carried over as they were; 320-339 at their new log end
    assert {key[1]: offset for key, (offset, _) in producer_checkpoint.load(tmp_path).items()} \
        == {**{i: 1 for i in range(300, 320)}, **{i: 2 for i in range(320, 330)}, **{i: 1 for i in range(330, 340)}}
    logs = open_logs(tmp_path)
    assert {p.index: sorted(p.producers.producers) for p in logs.topics["wide"].partitions[318:342]} \
        == {318: [7], 319: [7], **{i: [7, 8] for i in range(320, 330)}, **{i: [8] for i in range(330, 340)},
            340: [], 341: []}
    await logs.close()


async def test_a_checkpoint_entry_is_only_taken_by_the_topic_it_was_written_for(tmp_path):
    logs = open_logs(tmp_path)
    await append(logs.create_topic("again", 1).partitions[0], producer_id=7)
    await logs.close()
    logs = open_logs(tmp_path)
    await logs.delete_topic("again")
    partition = logs.create_topic("again", 1).partitions[0]
    for _ in range(3):
        await append(partition)  # past the entry's offset: only the topic id tells them apart
    await logs.close()
    reopened = open_logs(tmp_path).topics["again"].partitions[0]
    assert reopened.producers.producers == {}, "the deleted topic's producer state stayed with it"


async def test_state_replayed_after_a_crash_is_snapshotted_at_the_next_clean_shutdown(tmp_path, writes):
    logs = open_logs(tmp_path)
    partition = logs.create_topic("crashed", 2).partitions[0]
    await append(partition, producer_id=7)
    for segment in partition.segments:
        segment.release()  # a crash: no close, no snapshot
    logs = open_logs(tmp_path)
    assert logs.topics["crashed"].partitions[0].producers.producers[7].last_seq == 0
    writes.clear()
    await logs.close()
    # the replayed state, in the checkpoint file
    assert writes == {("write_file", "tmp"): 1, ("sync_filesystem", "filesystem"): 1}


async def test_a_restart_after_a_kill_replays_producer_state_from_the_periodic_snapshot(tmp_path, monkeypatch):
    from weir.broker.log import restart_points
    monkeypatch.setattr(restart_points, "PRODUCER_SNAPSHOT_INTERVAL", 10)
    monkeypatch.setattr(restart_points, "PRODUCER_SNAPSHOT_BATCHES", 1)
    logs = open_logs(tmp_path)
    partition = logs.create_topic("busy", 1).partitions[0]
    for _ in range(40):
        await append(partition, producer_id=7)
    assert await written_in_background()
    assert partition.producers.snapshot_offsets() == [16, 32]  # at least 16 offsets apart per producer
    for segment in partition.segments:
        segment.release()  # a kill: no close
    reopened = open_logs(tmp_path).topics["busy"].partitions[0]
    assert reopened.producers.snapshot_offset == 32
    assert reopened.producers.producers[7].last_seq == 39, "the snapshot at 32, then 8 batches replayed"


def test_crcs_are_checked_at_the_first_start_of_a_boot_only(tmp_path, monkeypatch):
    from weir.broker.log import manager as manager_module, restart_points
    boot = tmp_path / "boot_id"
    monkeypatch.setattr(restart_points, "_BOOT_ID_PATH", str(boot))
    verified = []
    real_recover = manager_module.Partition.open
    monkeypatch.setattr(manager_module.Partition, "open",
                        lambda self, verify=True, **kw: (verified.append(verify), real_recover(self, verify, **kw))[1])
    data = tmp_path / "data"
    boot.write_text("first boot")
    asyncio.run(_create(data))
    for boot_id, expected in (("first boot", False), ("second boot", True), ("second boot", False)):
        boot.write_text(boot_id)
        verified.clear()
        asyncio.run(open_logs(data).close())
        assert set(verified) == {expected}, boot_id


async def _create(data):
    logs = open_logs(data)
    logs.create_topic("t", 2)
    await logs.close()


def test_a_restart_in_the_same_boot_resumes_from_the_index_checkpoint_and_cuts_a_torn_tail(tmp_path, monkeypatch):
    from weir.broker.log import partition as partition_module
    from tests.log.test_partition import append, open_partition, read_values
    from weir.broker.log import restart_points
    monkeypatch.setattr(restart_points, "INDEX_CHECKPOINT_BYTES", 2000)
    monkeypatch.setattr(restart_points, "INDEX_CHECKPOINT_ENTRIES", 1)
    p = open_partition(tmp_path, **{"index.interval.bytes": 500})
    for i in range(32):
        append(p, bytes([i]) * 300)
    checkpointed = p.active.checkpointed_size
    assert 0 < checkpointed < p.active.size
    assert WRITER.wait_idle(10), "the restart-point thread wrote the checkpoints"
    size = p.active.size
    for segment in p.segments:
        segment.release()  # a kill
    with open(p.active.log_path, "r+b") as log_file:
        log_file.truncate(size - 100)  # the last write torn short
    walked = []
    real_scan = partition_module.Segment.scan
    monkeypatch.setattr(partition_module.Segment, "scan",
                        lambda self, position=0, **kw: (walked.append(position), real_scan(self, position, **kw))[1])
    reopened = open_partition_trusted(tmp_path)
    assert walked and min(walked) > 0, "walked from the last indexed batch, not from the start"
    assert reopened.log_end_offset == 31, "the torn batch cut"
    assert [v[0] for v in read_values(reopened, 0, max_bytes=10**6)] == list(range(31))
    assert read_values(reopened, 30) == [bytes([30]) * 300], "lookups through the resumed index"
    append(reopened, b"after")
    assert read_values(reopened, 31) == [b"after"]


def open_partition_trusted(path):
    from weir.broker.config import BrokerConfig
    from weir.broker.log.partition import Partition
    config = BrokerConfig().topic_defaults()
    config["index.interval.bytes"] = 500
    partition = Partition("t", 0, path, config)
    partition.open(verify=False)
    return partition


async def test_an_abort_since_the_last_flush_is_fsynced_before_the_checkpoint_that_stops_its_replay(tmp_path, writes):
    logs = open_logs(tmp_path)
    partition = logs.create_topic("txn", 1).partitions[0]
    batch = rec.encode_batch([rec.Record(b"v")], producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    await partition.append_client_batch(memoryview(batch), rec.read_header(batch), 0, lambda _header: None)
    await partition.append_marker(7, 0, 0, False, 0)
    order = []
    real_fsync, real_replace = disk.fsync, disk.replace_file
    writes.clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(disk, "fsync", lambda fd, path: (order.append(path.rsplit(".", 1)[-1]), real_fsync(fd, path)))
        patch.setattr(disk, "replace_file",
                      lambda path, data: (order.append(str(path).rsplit(".", 1)[-1]), real_replace(path, data)))
        await logs.close()
    assert order[0] == "txnindex" and order[1].endswith(producer_checkpoint.FILE_NAME), \
        "the abort durable, with its file's name, before the checkpoint that stops its replay"
    assert writes[("fsync_directory", "directory")] == 1 and writes[("sync_filesystem", "filesystem")] == 1
    reopened = open_logs(tmp_path).topics["txn"].partitions[0]
    aborted = partition_txns.aborted_between(reopened, 0, 2)
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in aborted] == [(7, 0, 1)]
