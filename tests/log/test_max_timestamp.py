"""ListOffsets -3 (max timestamp): the offset of the record with the largest timestamp.

As Kafka since KAFKA-16310: of the batches sharing the largest timestamp the
earliest wins, and in it the earliest record carrying that timestamp; the batch
is decoded (decompressed) to find the record.
"""

import pytest

from weir.broker.log import time_lookup
from weir.protocol import records as rec
from weir.protocol.compression import Compression
from tests.log.test_partition import open_partition, submit

CODECS = list(Compression)


def append(partition, *timestamps, compression=Compression.NONE):
    batch = rec.encode_batch([rec.Record(b"v%d" % t, timestamp=t) for t in timestamps], compression=compression)
    validated = partition.validate_client_batch(memoryview(batch), 9, 0)
    return submit(partition, validated.batch, validated.header).base_offset


def test_empty_partition_has_none(tmp_path):
    assert time_lookup.max_timestamp_offset(open_partition(tmp_path)) is None


@pytest.mark.parametrize("compression", CODECS, ids=[c.name for c in CODECS])
def test_out_of_order_timestamps_within_a_batch(tmp_path, compression):
    p = open_partition(tmp_path)
    append(p, 5, 9, 7, compression=compression)  # offsets 0-2
    assert time_lookup.max_timestamp_offset(p) == (1, 9)  # before the fix: the batch's last offset, 2


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.ZSTD], ids=["none", "zstd"])
def test_out_of_order_timestamps_across_batches(tmp_path, compression):
    p = open_partition(tmp_path)
    append(p, 1, 2, compression=compression)      # 0-1
    append(p, 3, 10, 4, compression=compression)  # 2-4
    append(p, 6, compression=compression)         # 5
    assert time_lookup.max_timestamp_offset(p) == (3, 10)


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.LZ4], ids=["none", "lz4"])
def test_ties_go_to_the_earliest_batch_and_the_earliest_record_in_it(tmp_path, compression):
    p = open_partition(tmp_path)
    append(p, 1, 2, compression=compression)        # 0-1
    append(p, 3, 8, 5, 8, compression=compression)  # 2-5: the first 8 in the first batch holding 8
    append(p, 8, 8, compression=compression)        # 6-7: same max timestamp, a later batch
    assert time_lookup.max_timestamp_offset(p) == (3, 8)


def test_ties_across_segments_go_to_the_earliest_segment_also_after_reopening(tmp_path):
    p = open_partition(tmp_path, **{"segment.bytes": 200})
    append(p, 1, 2)       # 0-1
    append(p, 4, 9, 9)    # 2-4
    append(p, 3)          # 5
    append(p, 9, 2)       # 6-7
    append(p, 8)          # 8
    assert len(p.segments) > 2
    assert time_lookup.max_timestamp_offset(p) == (3, 9)
    p.close()
    reopened = open_partition(tmp_path, **{"segment.bytes": 200})
    assert time_lookup.max_timestamp_offset(reopened) == (3, 9)


def test_a_later_larger_timestamp_wins(tmp_path):
    p = open_partition(tmp_path)
    append(p, 7, 3)
    assert time_lookup.max_timestamp_offset(p) == (0, 7)
    append(p, 2, 11, 11)
    assert time_lookup.max_timestamp_offset(p) == (3, 11)
