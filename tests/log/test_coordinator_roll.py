"""The cleaner rolls a coordinator topic's active segment as it outgrows the clean part, so the
history is compacted as it grows and a restart replays about the live state (cleaner.py)."""

from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.log.cleaner import ACTIVE_ROLL_MIN_BYTES
from weir.broker.log.partition import Partition
from tests.log.cleaner_helpers import clean, make_cleaner, put, records

VALUE = b"v" * 1000


def open_partition(path, topic: str) -> Partition:
    config = BrokerConfig().topic_defaults()
    config.update({"cleanup.policy": "compact", "segment.bytes": 100 * 1024 * 1024})
    path.mkdir(parents=True, exist_ok=True)
    partition = Partition(topic, 0, path, config)
    partition.open()
    return partition


async def fill(partition, size: int) -> None:
    n = 0
    while partition.active.size < size:
        await put(partition, (b"key-%d" % (n % 8), VALUE + b"%d" % n))
        n += 1


async def test_a_coordinator_segment_is_rolled_once_past_the_clean_part(tmp_path):
    partition = open_partition(tmp_path / "__transaction_state-0", "__transaction_state")
    cleaner = make_cleaner(partition, ManualClock())
    await fill(partition, ACTIVE_ROLL_MIN_BYTES - 2000)
    assert await cleaner.roll_coordinator_segments() == 0  # below the floor
    await fill(partition, ACTIVE_ROLL_MIN_BYTES)
    assert await cleaner.roll_coordinator_segments() == 1
    assert len(partition.segments) == 2 and partition.active.size == 0
    await clean(partition, cleaner=cleaner)
    assert len(records(partition)) == 8  # the live state: one record per key
    assert await cleaner.roll_coordinator_segments() == 0  # nothing new written


async def test_user_topics_keep_kafkas_rolling(tmp_path):
    partition = open_partition(tmp_path / "compacted-0", "compacted")
    cleaner = make_cleaner(partition, ManualClock())
    await fill(partition, ACTIVE_ROLL_MIN_BYTES * 2)
    assert await cleaner.roll_coordinator_segments() == 0
    assert len(partition.segments) == 1
