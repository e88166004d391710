"""Segment files within the broker's descriptor budget: lazy opening, LRU closing, transparent reopening."""

import asyncio
import os
import resource

import pytest

from weir.broker.config import BrokerConfig
from weir.broker.log.open_files import SegmentFiles
from weir.broker.log.partition import Partition
from weir.protocol import records as rec
from weir.protocol.errors import Errors, KafkaError


def open_fds_under(directory) -> int:
    """Descriptors this process holds on files under ``directory`` (what /proc says, not our count)."""
    prefix = str(directory)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(prefix):
                count += 1
        except OSError:
            pass
    return count


def make_partition(directory, files, index=0, **overrides):
    config = BrokerConfig().topic_defaults()
    config.update(overrides)
    partition = Partition("t", index, directory, config, files)
    partition.open()
    return partition


def append(partition, value):
    batch = memoryview(rec.encode_batch([rec.Record(value, timestamp=1000)]))
    validated = partition.validate_client_batch(batch, 9, 0)
    return asyncio.run(partition.append_client_batch(validated.batch, validated.header, 0)).base_offset


def values(partition, offset=0):
    data = partition.read(offset, 10**9).records
    return [r.value for _h, records in rec.decode_batches(data) for r in records]


def test_a_new_partition_holds_no_descriptor(tmp_path):
    files = SegmentFiles(8)
    make_partition(tmp_path / "p", files)
    assert len(files) == 0
    assert open_fds_under(tmp_path) == 0


def test_many_partitions_stay_within_the_budget_and_reopen_on_use(tmp_path):
    files = SegmentFiles(4)
    partitions = [make_partition(tmp_path / f"p{i}", files, i) for i in range(40)]
    for round_ in range(3):
        for i, partition in enumerate(partitions):
            append(partition, f"{i}:{round_}".encode())
            assert open_fds_under(tmp_path) <= 4
    for i, partition in enumerate(partitions):  # most were closed meanwhile: reads reopen them
        assert values(partition) == [f"{i}:{r}".encode() for r in range(3)]
        assert open_fds_under(tmp_path) <= 4
    assert len(files) == 4


def test_sealed_segments_hold_no_descriptor(tmp_path):
    files = SegmentFiles(100)
    partition = make_partition(tmp_path / "p", files, **{"segment.bytes": 200})
    for i in range(30):
        append(partition, bytes([i]) * 100)
    assert len(partition.segments) > 10
    assert open_fds_under(tmp_path) == 1, "only the active segment's .log is open"
    assert values(partition, 0)[0] == bytes([0]) * 100
    partition.close()
    assert open_fds_under(tmp_path) == 0
    reopened = make_partition(tmp_path / "p", files, **{"segment.bytes": 200})
    assert [values(reopened, offset)[0][0] for offset in range(30)] == list(range(30)), \
        "sealed indexes were written and load"
    assert open_fds_under(tmp_path) == len(files) == 30, "read segments stay open while the budget allows"


def test_a_pinned_segment_is_never_closed_under_a_worker_thread(tmp_path):
    files = SegmentFiles(1)
    first = make_partition(tmp_path / "a", files, 0)
    append(first, b"a")
    first.active.pin()
    second = make_partition(tmp_path / "b", files, 1)
    append(second, b"b")  # over the budget: the only idle file is second's own
    assert first.active._fd is not None
    first.active.unpin()
    append(make_partition(tmp_path / "c", files, 2), b"c")
    assert first.active._fd is None and len(files) == 1
    first.active.pin()
    first.close()  # e.g. a topic deleted during a worker-thread fsync: closed once the thread is done
    assert first.active._fd is not None
    first.active.unpin()
    assert first.active._fd is None and open_fds_under(tmp_path / "a") == 0


def test_out_of_descriptors_is_a_storage_error(tmp_path):
    """EMFILE while reopening a segment answers KAFKA_STORAGE_ERROR and changes nothing."""
    files = SegmentFiles(1)
    first = make_partition(tmp_path / "a", files, 0)
    append(first, b"kept")
    append(make_partition(tmp_path / "b", files, 1), b"b")  # closes first's file
    batch = memoryview(rec.encode_batch([rec.Record(b"lost", timestamp=1000)]))
    validated = first.validate_client_batch(batch, 9, 0)
    loop = asyncio.new_event_loop()  # made before the descriptors run out
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    hoard = []
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 16, hard))
        with pytest.raises(OSError):
            while True:
                hoard.append(os.open(os.devnull, os.O_RDONLY))
        with pytest.raises(KafkaError) as err:
            loop.run_until_complete(first.append_client_batch(validated.batch, validated.header, 0))
        assert err.value.error == Errors.KAFKA_STORAGE_ERROR
        with pytest.raises(KafkaError) as err:
            first.read(0, 100)
        assert err.value.error == Errors.KAFKA_STORAGE_ERROR
    finally:
        for fd in hoard:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        loop.close()
    assert values(first) == [b"kept"] and first.log_end_offset == 1
    assert append(first, b"after") == 1
