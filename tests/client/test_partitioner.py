import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from weir.client.partitioner import StickyPartitioner, murmur2, partition_for_key


@pytest.mark.parametrize("key,expected", [
    # Kafka's own vectors (UtilsTest.testMurmur2)
    (b"21", -973932308), (b"foobar", -790332482), (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971), (b"abc", 479470107),
])
def test_murmur2_matches_kafka(key, expected):
    assert murmur2(key) == expected


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(key):
    theirs = kafka_python_murmur2(key)
    assert murmur2(key) & 0xFFFFFFFF == theirs & 0xFFFFFFFF


def test_keys_land_where_toPositive_murmur2_puts_them():
    assert partition_for_key(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7


def test_sticky_partition_holds_until_batch_size_then_moves():
    partitioner = StickyPartitioner(batch_size=100, rng=random.Random(1))
    first = partitioner.partition("t", 4)
    for _ in range(9):
        partitioner.record_appended("t", first, 10, 4)
        assert partitioner.partition("t", 4) == first
    partitioner.record_appended("t", first, 10, 4)
    assert partitioner.partition("t", 4) != first


def test_sticky_partitions_spread_over_all_partitions():
    partitioner = StickyPartitioner(batch_size=1, rng=random.Random(7))
    seen = set()
    for _ in range(200):
        chosen = partitioner.partition("t", 5)
        seen.add(chosen)
        partitioner.record_appended("t", chosen, 1, 5)
    assert seen == set(range(5))
