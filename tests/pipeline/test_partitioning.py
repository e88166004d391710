"""The sink's C keyed partitioner picks what Kafka's Java producer picks."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from client.partitioner import partition_for_key as python_partition_for_key

from pipeline import _murmur2 as c_partitioner  # built by `pip install -e .` (setup.py)


@pytest.mark.parametrize("key,murmur2", [
    # Kafka's own vectors (UtilsTest.testMurmur2): the partition is toPositive(murmur2) % n
    (b"21", -973932308), (b"foobar", -790332482), (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971), (b"abc", 479470107),
])
@pytest.mark.parametrize("partitions", [1, 2, 7, 1000, 2**31 - 1])
def test_kafka_vectors(key, murmur2, partitions):
    assert c_partitioner.partition_for_key(key, partitions) == (murmur2 & 0x7FFFFFFF) % partitions


@given(st.binary(max_size=64), st.integers(1, 10_000))
def test_matches_the_clients_python_partitioner(key, partitions):
    assert c_partitioner.partition_for_key(key, partitions) == python_partition_for_key(key, partitions)


def test_rejects_no_partitions():
    with pytest.raises(ValueError):
        c_partitioner.partition_for_key(b"k", 0)
