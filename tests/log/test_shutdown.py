"""Shutdown and restart of the log store. Clean shutdown writes only what changed: a producer snapshot for a
partition whose producer
state changed since its newest snapshot, an fsync for a segment written since its last flush
(and for its directory when that write created a file).
Counted through the disk layer (every write goes through it), not timed."""

import asyncio
from collections import Counter

import pytest

from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.log import disk
from weir.broker.log.manager import LogManager
from weir.protocol import records as rec

PARTITIONS = 1000  # the count written scales with the partitions changed, not with these


@pytest.fixture
def writes(monkeypatch):
    counted: Counter = Counter()
    for name in ("replace_durably", "fsync", "write_file", "append_file", "fsync_directory"):
        real = getattr(disk, name)

        def counting(*args, _real=real, _name=name, **kwargs):
            path = str(args[1] if _name == "fsync" else args[0])
            counted[(_name, "directory" if _name == "fsync_directory" else path.rsplit(".", 1)[-1])] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(disk, name, counting)
    return counted


def open_logs(path) -> LogManager:
    logs = LogManager(path, BrokerConfig({"max.broker.partitions": str(PARTITIONS + 100)}), ManualClock())
    logs.open()
    return logs


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
    # the first write created each .log: its name is fsynced with its data
    # and the active segment's two index files, without fsync (replace_file: a .tmp renamed)
    assert writes == {("replace_durably", "snapshot"): 30, ("fsync", "log"): 330, ("fsync_directory", "directory"): 330,
                      ("write_file", "tmp"): 2 * 330}

    logs = open_logs(tmp_path)
    assert [p.log_end_offset for p in logs.topics["wide"].partitions[299:331]] == [1] * 31 + [0]
    writes.clear()
    await logs.close()
    assert writes == {}, "nothing changed since the last start: nothing written"

    logs = open_logs(tmp_path)
    for partition in logs.topics["wide"].partitions[320:340]:
        await append(partition, producer_id=8)
    writes.clear()
    await logs.close()
    # 330-339 were never written before: their directories and index files are new; 320-329 add no
    # index entry (one small batch each), so their index checkpoints get nothing appended
    assert writes == {("replace_durably", "snapshot"): 20, ("fsync", "log"): 20, ("write_file", "tmp"): 2 * 10,
                      ("fsync_directory", "directory"): 10}


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
    # the replayed state, once (the log was flushed), and the index checkpoint the crash left unwritten
    assert writes == {("replace_durably", "snapshot"): 1, ("write_file", "tmp"): 2}


async def test_a_restart_after_a_kill_replays_producer_state_from_the_periodic_snapshot(tmp_path, monkeypatch):
    from weir.broker.log import restart_points
    monkeypatch.setattr(restart_points, "PRODUCER_SNAPSHOT_INTERVAL", 10)
    logs = open_logs(tmp_path)
    partition = logs.create_topic("busy", 1).partitions[0]
    for _ in range(40):
        await append(partition, producer_id=7)
    assert partition.producers.snapshot_offsets() == [16, 32]  # at least 16 offsets apart per producer
    for segment in partition.segments:
        segment.release()  # a kill: no close
    reopened = open_logs(tmp_path).topics["busy"].partitions[0]
    assert reopened.producers.snapshot_offset == 32
    assert reopened.producers.producers[7].last_seq == 39, "the snapshot at 32, then 8 batches replayed"


def test_crcs_are_checked_at_the_first_start_of_a_boot_only(tmp_path, monkeypatch):
    from weir.broker.log import manager as manager_module
    boot = tmp_path / "boot_id"
    monkeypatch.setattr(manager_module, "_BOOT_ID_PATH", str(boot))
    verified = []
    real_recover = manager_module.Partition.open
    monkeypatch.setattr(manager_module.Partition, "open",
                        lambda self, verify=True: (verified.append(verify), real_recover(self, verify))[1])
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
    p = open_partition(tmp_path, **{"index.interval.bytes": 500})
    for i in range(32):
        append(p, bytes([i]) * 300)
    checkpointed = p.active.checkpointed_size
    assert 0 < checkpointed < p.active.size
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
