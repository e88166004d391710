"""The C keyed partitioner (client/_murmur2.c) picks what Kafka's Java producer picks, per key and per
Arrow key column."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weir.client import _murmur2 as c_partitioner  # built by `pip install -e .` (setup.py)
from weir.client.partitioner import partition_for_key_python as python_partition_for_key


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


# Arrow key columns: binary/string, their large variants, with nulls, sliced (a non-zero array offset)
arrow_types = st.sampled_from(["binary", "string", "large_binary", "large_string"])
key_lists = st.lists(st.none() | st.binary(max_size=20), max_size=60)


def arrow_keys(keys, type_name, drop):
    import pyarrow as pa
    arrow_type = getattr(pa, type_name)()
    if "string" in type_name:
        keys = [None if k is None else k.hex() for k in keys]
    return pa.array([b"x"] * drop + keys, type=arrow_type)[drop:]


@given(key_lists, arrow_types, st.integers(0, 9), st.integers(1, 40), st.integers(-1, 100))
def test_arrow_rows_are_grouped_as_the_python_reference_and_the_per_key_partitioner_group_them(
        keys, type_name, drop, partitions, turn):
    from weir.client.partitioner import partition_rows_python
    from weir.protocol.record_builder import arrow_column
    column = arrow_keys(keys, type_name, drop)
    spec = arrow_column(column)
    expected = partition_rows_python(spec, len(keys), partitions, turn)
    assert c_partitioner.partition_rows(spec, len(keys), partitions, turn) == expected
    groups, last_turn = expected
    rows_of = {}
    for partition, group in enumerate(groups):
        for row in memoryview(group).cast("i"):
            rows_of[row] = partition
    assert sorted(rows_of) == list(range(len(keys)))  # every row once, each group ascending
    assert all(list(memoryview(g).cast("i")) == sorted(memoryview(g).cast("i")) for g in groups)
    values = column.to_pylist()
    nulls = 0
    for row, key in enumerate(values):
        if key is None:
            nulls += 1
            assert rows_of[row] == (turn + nulls) % partitions  # round-robin, per null-key row
        else:
            key = key.encode() if isinstance(key, str) else key
            assert rows_of[row] == python_partition_for_key(key, partitions)
    assert last_turn == turn + nulls


def test_arrow_rows_with_an_all_null_key_column_go_round_robin():
    groups, turn = c_partitioner.partition_rows(None, 5, 2, -1)
    assert [list(memoryview(g).cast("i")) for g in groups] == [[0, 2, 4], [1, 3]] and turn == 4
