"""Group commit (broker/log/group_commit.py): writers waiting together share one fsync per file,
run in a worker thread; a failed fsync fails only the writers of that file."""

import asyncio
import errno
import threading

from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.log import disk
from weir.broker.log.manager import LogManager
from weir.protocol import records as rec
from weir.protocol.errors import Errors, KafkaError


async def produce(logs, partition, value=b"v"):
    batch = rec.encode_batch([rec.Record(value)])
    result = await partition.append_client_batch(memoryview(batch), rec.read_header(batch), 0)
    await logs.maybe_flush(partition)
    return result.base_offset


async def test_writers_waiting_together_share_one_fsync_in_a_worker_thread(tmp_path, monkeypatch):
    logs = LogManager(tmp_path, BrokerConfig({"log.flush.interval.messages": "1"}), ManualClock())
    logs.open()
    partitions = logs.create_topic("flushed", 2).partitions
    threads = set()
    real_fsync = disk.fsync

    def fsync(fd, path):
        threads.add(threading.current_thread())
        real_fsync(fd, path)
    monkeypatch.setattr(disk, "fsync", fsync)
    offsets = await asyncio.gather(*(produce(logs, partitions[i % 2]) for i in range(100)))
    assert sorted(offsets) == [i // 2 for i in range(100)]
    assert all(not segment.unflushed for p in partitions for segment in p.segments)
    assert logs.group_commit.rounds <= 3, "the first writer's round, then one for all that came meanwhile"
    assert logs.group_commit.fsyncs <= 3 * 4  # per round: two segments, at most two directories
    assert threading.main_thread() not in threads
    await logs.close()


async def test_a_failed_fsync_fails_the_writers_of_that_file_only(tmp_path, monkeypatch):
    logs = LogManager(tmp_path, BrokerConfig({"log.flush.interval.messages": "1"}), ManualClock())
    logs.open()
    healthy, failing = logs.create_topic("half", 2).partitions
    real_fsync = disk.fsync

    def fsync(fd, path):
        if "half-1" in path:
            raise disk.failed(path, OSError(errno.EIO, "injected"), f"cannot fsync {path}")
        real_fsync(fd, path)
    monkeypatch.setattr(disk, "fsync", fsync)
    results = await asyncio.gather(produce(logs, healthy), produce(logs, failing), return_exceptions=True)
    assert results[0] == 0
    assert isinstance(results[1], KafkaError) and results[1].error == Errors.KAFKA_STORAGE_ERROR
    assert failing.active.unflushed, "flushed by the next round"
    monkeypatch.setattr(disk, "fsync", real_fsync)
    assert await produce(logs, failing) == 1
    assert not failing.active.unflushed
    await logs.close()
