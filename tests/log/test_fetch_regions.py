"""Zero-copy fetch pieces: a read by reference names exactly the bytes a read by copy returns,
a response encoded around its regions is byte-identical to the one encoded through the bytes,
and a region's segment stays readable while it is pinned (LRU, deletion)."""

import os
import random

from weir.broker.config import BrokerConfig
from weir.broker.log.open_files import SegmentFiles
from weir.broker.log.partition import Partition
from weir.broker.log.segment import SegmentRegion
from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ServerConnection
from weir.protocol.headers import RequestHeader
from weir.protocol.messages import fetch as msg
from weir.protocol.response_pieces import ResponsePieces

from .test_partition import append, open_partition


def filled_partition(path, **overrides):
    partition = open_partition(path, **overrides)
    rng = random.Random(7)
    for i in range(300):  # batches of 1 to 12 records of 10 B to 3 KiB: index entries every few batches
        append(partition, *(bytes([i % 256]) * rng.randint(10, 3000) for _ in range(rng.randint(1, 12))))
    return partition


def test_a_read_by_reference_names_the_bytes_a_read_by_copy_returns(tmp_path):
    partition = filled_partition(tmp_path, **{"segment.bytes": 256 * 1024})
    assert len(partition.segments) > 3
    rng = random.Random(11)
    end = partition.log_end_offset
    for _ in range(400):
        offset = rng.randrange(end)
        max_bytes = rng.choice([0, 1, 100, 5000, rng.randint(1, 300_000), 10**9])
        bound = rng.choice([None, rng.randrange(offset, end + 1)])
        min_one = rng.random() < 0.7
        copied = partition.read(offset, max_bytes, bound, min_one=min_one)
        referenced = partition.read(offset, max_bytes, bound, min_one=min_one, by_reference=True)
        if copied.records:
            assert isinstance(referenced.records, SegmentRegion)
            assert referenced.records.read() == bytes(copied.records), (offset, max_bytes, bound, min_one)
        else:
            assert not referenced.records
        assert referenced.end_offset == copied.end_offset


def fetch_body(partition, offsets):
    """A Fetch response body with one partition answer per offset, records by reference."""
    answers = []
    for index, offset in enumerate(offsets):
        result = partition.read(offset, 20_000, by_reference=True)
        answers.append(msg.PartitionData(partition_index=index, high_watermark=result.high_watermark,
                                         log_start_offset=0, records=result.records,
                                         aborted_transactions=[msg.AbortedTransaction(producer_id=5, first_offset=1)]))
    answers.append(msg.PartitionData(partition_index=99, error_code=1, high_watermark=-1, records=None))
    return msg.RESPONSE(session_id=0, responses=[msg.TopicResponse(topic="t", partitions=answers)])


def with_bytes(body):
    """The same body with every region replaced by its bytes (what the old encoder wrote)."""
    for topic in body.responses:
        for answer in topic.partitions:
            if isinstance(answer.records, SegmentRegion):
                answer.records = answer.records.read()
    return body


def test_a_response_encoded_around_its_regions_is_byte_identical(tmp_path):
    partition = filled_partition(tmp_path, **{"segment.bytes": 256 * 1024})
    for version in (4, 11, 12):  # classic and flexible encodings
        header = RequestHeader(ApiKey.FETCH, version, 42, "c")
        pieces = ServerConnection.encode_response(header, version, msg.RESPONSE, fetch_body(partition, [0, 50, 700]))
        assert isinstance(pieces, ResponsePieces) and len(pieces.regions) == 3
        copied = ServerConnection.encode_response(header, version, msg.RESPONSE,
                                                  with_bytes(fetch_body(partition, [0, 50, 700])))
        assert not copied.regions
        assert pieces.joined() == bytes(copied)
        assert pieces.frame_size == len(copied)
        pieces.release()
    assert not any(segment.pinned for segment in partition.segments)


def test_a_region_encoded_into_a_plain_buffer_is_copied_in(tmp_path):
    partition = filled_partition(tmp_path)
    region = partition.read(3, 50_000, by_reference=True).records
    out = bytearray()
    msg.PartitionData.writer(12, True)(out, msg.PartitionData(partition_index=0, records=region))
    expected = bytearray()
    msg.PartitionData.writer(12, True)(expected, msg.PartitionData(partition_index=0, records=region.read()))
    assert out == expected
    assert not region.segment.pinned


def test_a_pinned_region_outlives_the_fd_budget_and_its_segments_deletion(tmp_path):
    config = BrokerConfig().topic_defaults()
    config["segment.bytes"] = 64 * 1024
    partition = Partition("t", 0, tmp_path, config, SegmentFiles(limit=1))  # one open file for the log
    partition.open()
    for i in range(100):
        append(partition, bytes([i]) * 4000)
    oldest = partition.segments[0]
    expected = partition.read(0, 30_000).records
    header = RequestHeader(ApiKey.FETCH, 12, 1, "c")
    body = msg.RESPONSE(responses=[msg.TopicResponse(topic="t", partitions=[
        msg.PartitionData(partition_index=0, records=partition.read(0, 30_000, by_reference=True).records)])])
    pieces = ServerConnection.encode_response(header, 12, msg.RESPONSE, body)
    assert oldest.pinned
    partition.read(partition.log_end_offset - 1, 100)  # other segments open: the LRU must skip the pinned one
    partition.drop_oldest_segments(1)  # retention / DeleteRecords while the send is pending
    assert not (tmp_path / "00000000000000000000.log").exists()
    [(_at, region, fd)] = pieces.regions
    assert os.pread(fd, len(expected), region.position) == bytes(expected), "the unlinked file is still read"
    pieces.release()
    assert not oldest.pinned and oldest._fd is None, "the last unpin closes the deleted segment's file"
