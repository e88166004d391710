"""ListOffsets by timestamp, on Weir and on Apache Kafka."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import produce
from weir.protocol.records import Record, encode_batch
from tests.reference.differential import differential
from tests.reference.wire import V_PRODUCE
from tests.support.topics import KEEP_FOREVER

TOPIC = "by-time"
T0 = 1_700_000_000_000
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


async def offsets_by_timestamp(wire, t):
    await wire.create_topic(TOPIC, partitions=2, config=KEEP_FOREVER)  # T0 is in 2023
    for timestamp in (LATEST, EARLIEST, MAX_TIMESTAMP, T0):
        t.add(f"empty, {timestamp}", await wire.list_offsets(TOPIC, 0, timestamp))
    batch = encode_batch([Record(b"a", timestamp=T0), Record(b"b", timestamp=T0 + 50),
                          Record(b"c", timestamp=T0 + 10)])
    t.add("produce three", await wire.connection.request(ApiKey.PRODUCE, V_PRODUCE, produce.REQUEST(
        acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(name=TOPIC, partition_data=[
            produce.PartitionData(index=0, records=batch)])])))
    for timestamp in (LATEST, EARLIEST, MAX_TIMESTAMP, T0 - 5, T0 + 5, T0 + 50, T0 + 51):
        t.add(f"three, {timestamp}", await wire.list_offsets(TOPIC, 0, timestamp))
    for timestamp in (-4, -5, -100):
        t.add(f"unsupported {timestamp}", await wire.list_offsets(TOPIC, 0, timestamp))
    t.add("three partitions of two", await wire.list_offsets(TOPIC, 0, LATEST, partitions=3))


def _found(answer):
    partition = answer["topics"][0]["partitions"][0]
    return partition["error_code"], partition["offset"], partition["timestamp"], partition["leader_epoch"]


async def test_list_offsets_by_timestamp(any_broker, kafka_broker):
    def facts(steps):
        # Weir named the batch's last offset for -3, gave leader epoch 0 with offset -1, and
        # answered INVALID_REQUEST to later special timestamps, until
        # broker/handlers/list_offsets.py and Partition.max_timestamp_offset answered as Kafka.
        assert _found(steps[f"empty, {MAX_TIMESTAMP}"]) == (Errors.NONE, -1, -1, -1)
        assert _found(steps[f"empty, {T0}"]) == (Errors.NONE, -1, -1, -1)
        assert _found(steps[f"three, {MAX_TIMESTAMP}"]) == (Errors.NONE, 1, T0 + 50, 0)
        assert _found(steps[f"three, {T0 + 5}"]) == (Errors.NONE, 1, T0 + 50, 0)
        assert _found(steps[f"three, {T0 + 51}"]) == (Errors.NONE, -1, -1, -1)
        assert _found(steps["unsupported -4"])[0] == Errors.UNSUPPORTED_VERSION
        partitions = steps["three partitions of two"]["topics"][0]["partitions"]
        assert [p["error_code"] for p in partitions] == [Errors.NONE, Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION]
    await differential(any_broker, kafka_broker, offsets_by_timestamp, facts=facts)
