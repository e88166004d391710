"""Partition log: append, read, roll, retention, recovery from torn tails, producer-state recovery."""

import asyncio
import os

import pytest

from weir.broker.config import BrokerConfig
from weir.broker.log import log_start, time_lookup
from weir.broker.log.partition import Partition
from weir.protocol import records as rec
from weir.protocol.errors import Errors, KafkaError


def open_partition(path, **overrides):
    config = BrokerConfig().topic_defaults()
    config.update(overrides)
    partition = Partition("t", 0, path, config)
    partition.open()
    return partition


def append(partition, *values, timestamp=1000, **batch_args):
    batch = memoryview(rec.encode_batch([rec.Record(v, timestamp=timestamp) for v in values], **batch_args))
    validated = partition.validate_client_batch(batch, 9, 0)
    return submit(partition, validated.batch, validated.header).base_offset


def submit(partition, batch, header=None, log_append_time_ms=-1):
    batch = memoryview(batch)
    return asyncio.run(partition.append_client_batch(batch, header or rec.read_header(batch), 0,
                                                     log_append_time_ms=log_append_time_ms))


def read_values(partition, offset=0, max_bytes=10**9, upper_bound=None):
    data = partition.read(offset, max_bytes, upper_bound).records
    return [r.value for _h, records in rec.decode_batches(data) for r in records]


def test_append_assigns_offsets_and_reads_back(tmp_path):
    p = open_partition(tmp_path)
    assert append(p, b"a", b"b") == 0
    assert append(p, b"c") == 2
    assert (p.log_end_offset, p.high_watermark) == (3, 3)
    assert read_values(p) == [b"a", b"b", b"c"]
    assert read_values(p, 2) == [b"c"]
    assert read_values(p, 1) == [b"a", b"b", b"c"], "the batch containing the offset is returned whole"
    assert read_values(p, 3) == []
    with pytest.raises(KafkaError) as err:
        p.read(4, 100)
    assert err.value.error == Errors.OFFSET_OUT_OF_RANGE


def test_read_returns_at_least_one_batch_and_respects_bounds(tmp_path):
    p = open_partition(tmp_path)
    for i in range(5):
        append(p, bytes([i]) * 500)
    assert len(read_values(p, 0, max_bytes=10)) == 1, "KIP-74: one batch even past max_bytes"
    assert len(read_values(p, 0, max_bytes=1200)) == 2
    assert read_values(p, 0, upper_bound=3) == [bytes([i]) * 500 for i in range(3)]


def test_rolls_segments_by_size_and_reads_across_them(tmp_path):
    p = open_partition(tmp_path, **{"segment.bytes": 1000})
    for i in range(30):
        append(p, b"%03d" % i * 50)
    assert len(p.segments) > 5
    assert [s.base_offset for s in p.segments] == sorted(s.base_offset for s in p.segments)
    collected, offset = [], 0
    while offset < p.log_end_offset:
        values = read_values(p, offset, max_bytes=1)
        collected += values
        offset += len(values)
    assert collected == [b"%03d" % i * 50 for i in range(30)]
    p.close()
    reopened = open_partition(tmp_path, **{"segment.bytes": 1000})
    assert reopened.log_end_offset == 30 and read_values(reopened, 29) == [b"029" * 50]


def test_retention_by_size_and_by_time(tmp_path):
    p = open_partition(tmp_path / "size", **{"segment.bytes": 500, "retention.bytes": 1500})
    for _ in range(40):
        append(p, b"x" * 100)
    assert log_start.apply_retention(p, now_ms=0) > 0
    assert p.size_bytes - p.segments[0].size < 1500
    assert p.log_start_offset == p.segments[0].base_offset > 0
    with pytest.raises(KafkaError):
        p.read(0, 100)
    assert read_values(p, p.log_start_offset)[0] == b"x" * 100

    q = open_partition(tmp_path / "time", **{"segment.bytes": 300, "retention.ms": 60_000})
    for i in range(10):
        append(q, b"y" * 100, timestamp=1_000 + i)
    append(q, b"new", timestamp=500_000)
    segments = len(q.segments)
    assert log_start.apply_retention(q, now_ms=50_000) == 0, "nothing is a minute old yet"
    assert log_start.apply_retention(q, now_ms=200_000) == segments - 1, "every sealed segment is past retention"
    assert len(q.segments) == 1, "the active segment is never deleted"
    assert read_values(q, q.log_start_offset)[-1] == b"new"


def test_recovery_truncates_torn_tail_and_corrupt_batches(tmp_path):
    p = open_partition(tmp_path)
    for i in range(10):
        append(p, b"v%d" % i)
    size = p.active.size
    log_path = p.active.log_path
    p.close()
    with open(log_path, "ab") as handle:
        handle.write(rec.encode_batch([rec.Record(b"z" * 100)])[:70])
    assert open_partition(tmp_path).log_end_offset == 10
    assert os.path.getsize(log_path) == size

    with open(log_path, "r+b") as handle:  # flip a byte inside the last batch: CRC mismatch
        handle.seek(size - 2)
        byte = handle.read(1)
        handle.seek(size - 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    recovered = open_partition(tmp_path)
    assert recovered.log_end_offset == 9
    assert read_values(recovered) == [b"v%d" % i for i in range(9)]
    assert append(recovered, b"after") == 9


def test_missing_or_torn_indexes_are_rebuilt(tmp_path):
    p = open_partition(tmp_path, **{"segment.bytes": 2000, "index.interval.bytes": 100})
    for i in range(50):
        append(p, b"%02d" % i * 20, timestamp=10_000 + i)
    p.close()
    indexes = sorted(tmp_path.glob("*.index"))
    indexes[0].write_bytes(b"\x00\x01")
    indexes[1].unlink()
    reopened = open_partition(tmp_path, **{"segment.bytes": 2000, "index.interval.bytes": 100})
    for offset in (0, 17, 33, 49):
        assert read_values(reopened, offset, max_bytes=1) == [b"%02d" % offset * 20]
    assert time_lookup.offset_for_timestamp(reopened, 10_025) == (25, 10_025)
    assert time_lookup.offset_for_timestamp(reopened, 99_999) is None


def test_producer_state_survives_restart_with_and_without_snapshot(tmp_path):
    p = open_partition(tmp_path, **{"segment.bytes": 400})
    for seq in range(0, 20, 2):
        append(p, b"a" * 40, b"b" * 40, producer_id=5, producer_epoch=0, base_sequence=seq)
    duplicate = memoryview(rec.encode_batch([rec.Record(b"a" * 40), rec.Record(b"b" * 40)], producer_id=5,
                                            producer_epoch=0, base_sequence=18))
    expected_offset = submit(p, duplicate).base_offset
    assert expected_offset == 18 and p.log_end_offset == 20
    for snapshot in list(tmp_path.glob("*.snapshot"))[::2]:
        snapshot.unlink()  # replay must fill the gap from whatever snapshot is left (or none)
    reopened = open_partition(tmp_path, **{"segment.bytes": 400})
    assert submit(reopened, duplicate).base_offset == 18
    gap = memoryview(rec.encode_batch([rec.Record(b"c")], producer_id=5, producer_epoch=0, base_sequence=30))
    with pytest.raises(KafkaError) as err:
        submit(reopened, gap)
    assert err.value.error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


@pytest.mark.parametrize("mutate,error", [
    (lambda b: b[:30], Errors.CORRUPT_MESSAGE),
    (lambda b: b + rec.encode_batch([rec.Record(b"two")]), Errors.INVALID_RECORD),
    (lambda b: b[:16] + b"\x01" + b[17:], Errors.INVALID_RECORD),
    (lambda b: b[:-1] + bytes([b[-1] ^ 1]), Errors.CORRUPT_MESSAGE),
])
def test_client_batch_validation(tmp_path, mutate, error):
    p = open_partition(tmp_path)
    with pytest.raises(KafkaError) as err:
        p.validate_client_batch(memoryview(mutate(rec.encode_batch([rec.Record(b"v")]))), 9, 0)
    assert err.value.error == error


def test_control_batches_from_clients_and_zstd_below_v7_are_refused(tmp_path):
    p = open_partition(tmp_path)
    marker = rec.encode_control_batch(commit=True, producer_id=1, producer_epoch=0, coordinator_epoch=0,
                                      timestamp=0)
    with pytest.raises(KafkaError) as err:
        p.validate_client_batch(memoryview(marker), 9, 0)
    assert err.value.error == Errors.INVALID_RECORD
    zstd = rec.encode_batch([rec.Record(b"v")], compression=rec.Compression.ZSTD)
    with pytest.raises(KafkaError) as err:
        p.validate_client_batch(memoryview(zstd), 6, 0)
    assert err.value.error == Errors.UNSUPPORTED_COMPRESSION_TYPE
    assert p.validate_client_batch(memoryview(zstd), 7, 0).header.records_count == 1


async def test_large_batches_written_off_the_loop_stay_ordered(tmp_path):
    from weir.broker.log.partition import OFFLOAD_WRITE_BYTES
    p = open_partition(tmp_path)
    p.offload_writes_until = float("inf")  # as after a slow write: big batches go to a worker thread
    big = [rec.encode_batch([rec.Record(bytes([i]) * OFFLOAD_WRITE_BYTES)]) for i in range(4)]
    small = rec.encode_batch([rec.Record(b"small")])
    batches = [big[0], small, big[1], big[2], small, big[3]]
    results = await asyncio.gather(*(p.append_client_batch(memoryview(b), rec.read_header(b), 0) for b in batches))
    assert [r.base_offset for r in results] == list(range(6))
    values = read_values(p)
    assert [v[:1] for v in values] == [b"\x00", b"s", b"\x01", b"\x02", b"s", b"\x03"]
    assert p.high_watermark == 6


async def test_batches_are_written_on_the_loop_until_a_write_is_slow(tmp_path, monkeypatch):
    """A slow write (the kernel throttling dirty pages) sends big batches to a worker thread for a
    while; small batches, and big ones before that, are written on the loop."""
    import weir.broker.log.partition as partition_module
    p = open_partition(tmp_path)
    in_worker = []
    write_in_worker = p.active.write_in_worker

    async def spied(chunks, size):
        in_worker.append(size)
        return await write_in_worker(chunks, size)
    monkeypatch.setattr(p.active, "write_in_worker", spied)
    big = rec.encode_batch([rec.Record(b"x" * partition_module.OFFLOAD_WRITE_BYTES)])
    small = rec.encode_batch([rec.Record(b"small")])

    async def append_batch(batch):
        return await p.append_client_batch(memoryview(batch), rec.read_header(batch), 0)
    await append_batch(big)
    assert in_worker == [], "written on the loop"
    now = [100.0]
    monkeypatch.setattr(partition_module, "perf_counter", lambda: now[0])
    real_write = p.active.write

    def slow_write(chunks, size):
        now[0] += partition_module.SLOW_WRITE_S * 2
        return real_write(chunks, size)
    monkeypatch.setattr(p.active, "write", slow_write)
    await append_batch(small)  # slow: from now on big batches go to a worker
    await append_batch(small)
    await append_batch(big)
    assert in_worker == [len(big)], "small batches stay on the loop"
    now[0] += partition_module.OFFLOAD_FOR_S
    await append_batch(big)
    assert len(in_worker) == 1, "back on the loop once no write was slow for OFFLOAD_FOR_S"
    size = partition_module.OFFLOAD_WRITE_BYTES
    assert [len(v) for v in read_values(p)] == [size, 5, 5, size, size]


async def test_message_count_flush_policy_fsyncs_after_n_messages(tmp_path):
    from weir.broker.clock import ManualClock
    from weir.broker.log.manager import LogManager
    manager = LogManager(tmp_path, BrokerConfig({"log.flush.interval.messages": "3"}), ManualClock())
    manager.open()
    p = manager.create_topic("flushed", 1).partitions[0]
    for expected_dirty in (True, True, False):
        batch = rec.encode_batch([rec.Record(b"v")])
        await p.append_client_batch(memoryview(batch), rec.read_header(batch), 0)
        await manager.maybe_flush(p)
        assert p.active.unflushed is expected_dirty
    await manager.close()


async def test_time_flush_policy_follows_flush_ms_on_the_clock(tmp_path):
    from weir.broker.clock import ManualClock
    from weir.broker.log.manager import LogManager
    clock = ManualClock()
    config = BrokerConfig({"log.flush.interval.ms": "1000", "log.flush.scheduler.interval.ms": "100"})
    manager = LogManager(tmp_path, config, clock)
    manager.open()
    p = manager.create_topic("timed", 1).partitions[0]
    p.last_flush_ms = clock.now_ms()
    manager.start_background_jobs()
    batch = rec.encode_batch([rec.Record(b"v")])
    await p.append_client_batch(memoryview(batch), rec.read_header(batch), 0)

    async def settle():
        for _ in range(20):
            await asyncio.sleep(0)

    for _ in range(5):  # 500 ms: younger than flush.ms, stays in the page cache
        clock.advance(100)
        await settle()
    assert p.active.unflushed
    for _ in range(6):
        clock.advance(100)
        await settle()
    deadline = asyncio.get_running_loop().time() + 5
    while p.active.unflushed and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    assert not p.active.unflushed
    await manager.close()


def test_lookups_jump_over_batches_larger_than_the_scan_chunk(tmp_path):
    from weir.broker.log.segment import LOOKUP_CHUNK
    p = open_partition(tmp_path, **{"index.interval.bytes": 10**9})  # one index entry: lookups must walk
    sizes = [LOOKUP_CHUNK * 3, 10, LOOKUP_CHUNK * 2, 10, 10]
    for i, size in enumerate(sizes):
        append(p, bytes([i]) * size)
    for offset, size in enumerate(sizes):
        assert read_values(p, offset, max_bytes=1) == [bytes([offset]) * size]
    p.close()
    assert open_partition(tmp_path).log_end_offset == 5, "recovery still verifies every big batch"


async def test_deleting_a_topic_waits_for_a_write_in_flight(tmp_path):
    from weir.broker.clock import ManualClock
    from weir.broker.log.manager import LogManager
    from weir.broker.log.partition import OFFLOAD_WRITE_BYTES
    manager = LogManager(tmp_path, BrokerConfig(), ManualClock())
    manager.open()
    p = manager.create_topic("doomed", 1).partitions[0]
    p.offload_writes_until = float("inf")  # the write goes to a worker thread
    big = rec.encode_batch([rec.Record(b"x" * OFFLOAD_WRITE_BYTES * 4)])
    result, _ = await asyncio.gather(p.append_client_batch(memoryview(big), rec.read_header(big), 0),
                                     manager.delete_topic("doomed"))
    assert result.base_offset == 0, "the write finished before its file was closed"
    assert not (tmp_path / "doomed-0").exists()


def test_read_past_the_first_batch_of_a_response_returns_only_whole_batches_that_fit(tmp_path):
    """A partition after the first one with data (KIP-74) gets only batches that fit, maybe none."""
    p = open_partition(tmp_path)
    for i in range(5):
        append(p, bytes([i]) * 500)
    size = p.segments[0].size // 5
    assert p.read(0, size - 1, min_one=False).records == b""
    assert len(read_values(p, 0, max_bytes=size - 1)) == 1  # the first of the response: one batch regardless
    result = p.read(1, 2 * size + size // 2, min_one=False)
    assert len(result.records) == 2 * size and result.end_offset == 3
    assert len(p.read(0, 5 * size, min_one=False).records) == 5 * size


async def test_retention_frees_a_deleted_segments_blocks_in_a_worker_thread(tmp_path, monkeypatch):
    """The name goes at once; the inode's last close, which frees the blocks, runs off the event loop."""
    import threading

    from tests.support.waiting import wait_until_async
    from weir.broker.log import segment as segment_module

    p = open_partition(tmp_path / "t-0", **{"segment.bytes": 500, "retention.bytes": 1000})
    for _ in range(20):
        validated = p.validate_client_batch(memoryview(rec.encode_batch([rec.Record(b"x" * 100)])), 9, 0)
        await p.append_client_batch(validated.batch, validated.header, 0)
    before = [s.log_path for s in p.segments]
    closed_in: list[threading.Thread] = []
    real_close = os.close
    monkeypatch.setattr(segment_module.os, "close",
                        lambda fd: (closed_in.append(threading.current_thread()), real_close(fd))[1])

    def still_open() -> list[str]:
        targets = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                targets.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                continue
        return [t for t in targets if any(t.startswith(str(path)) for path in doomed)]

    assert log_start.apply_retention(p, now_ms=0) > 0
    doomed = [path for path in before if path not in {s.log_path for s in p.segments}]
    assert doomed and not any(os.path.exists(path) for path in doomed)  # the names are gone at once
    await wait_until_async(lambda: not still_open(), "the deleted segments' last descriptors closed")
    assert any(thread is not threading.main_thread() for thread in closed_in)
