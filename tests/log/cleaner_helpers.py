"""Building compacted partitions and reading them back whole, for the cleaner tests."""

from __future__ import annotations

from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.log import cleaner_process
from weir.broker.log.cleaner import LogCleaner
from weir.broker.log.partition import Partition
from weir.protocol import records as rec
from weir.protocol.compression import Compression

DAY_MS = 86_400_000


def open_compacted(path, **overrides) -> Partition:
    config = BrokerConfig().topic_defaults()
    config.update({"cleanup.policy": "compact", "index.interval.bytes": 1, **overrides})
    path.mkdir(parents=True, exist_ok=True)
    partition = Partition("t", 0, path, config)
    partition.open()
    return partition


async def put(partition, *pairs, timestamp=1000, pid=-1, epoch=-1, seq=-1, transactional=False,
              compression=Compression.NONE) -> int:
    """One batch of (key, value) records; its base offset."""
    batch = memoryview(rec.encode_batch([rec.Record(value, key=key, timestamp=timestamp) for key, value in pairs],
                                        producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                        transactional=transactional, compression=compression))
    validated = partition.validate_client_batch(batch, 9, 0)
    return (await partition.append_client_batch(validated.batch, validated.header, 0, lambda _h: None)).base_offset


def batches(partition, start=None):
    """Every stored batch from ``start`` (default: the log start), decoded, as stored."""
    offset = partition.log_start_offset if start is None else start
    found = []
    while offset < partition.log_end_offset:
        result = partition.read(offset, 10**9)
        if not result.records:
            break
        found.extend(rec.decode_batches(result.records))
        offset = result.end_offset
    return found


def records(partition):
    """(offset, key, value) of every data record."""
    return [(r.offset, r.key, r.value) for header, recs in batches(partition) if not header.is_control
            for r in recs]


def latest(partition):
    """key -> value of the latest record per key (tombstones remove the key)."""
    state = {}
    for _offset, key, value in records(partition):
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    return state


def make_cleaner(partition, clock=None, data_dir=None, runner=cleaner_process.in_child_process, **settings):
    """``runner=cleaner_process.in_thread`` for a test that patches the pass in this process."""
    config = BrokerConfig({k: str(v) for k, v in settings.items()})
    return LogCleaner(data_dir or partition.directory.parent, config, clock or ManualClock(), lambda: [partition],
                      runner)


async def clean(partition, clock=None, cleaner=None, runner=cleaner_process.in_child_process):
    """One pass over everything cleanable, whatever the dirty ratio."""
    cleaner = cleaner or make_cleaner(partition, clock, runner=runner)
    target = cleaner.log_to_clean(partition, cleaner.clock.now_ms())
    target.first_dirty = partition.log_start_offset  # every pass re-examines the whole cleanable range
    return await cleaner.clean(target)


def reopen(partition) -> Partition:
    partition.close()
    again = Partition(partition.topic, partition.index, partition.directory, partition.config)
    again.open()
    return again
