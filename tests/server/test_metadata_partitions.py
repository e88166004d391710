"""The Metadata handler's per-topic partition entries, built once and shared between answers."""

from weir.broker.handlers import metadata


def test_entries_are_shared_until_the_topic_changes():
    metadata._partitions.cache_clear()
    first = metadata._partitions(b"a" * 16, 3, 1)
    assert [(p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) for p in first] == [
        (0, 1, [1], [1]), (1, 1, [1], [1]), (2, 1, [1], [1])]
    assert metadata._partitions(b"a" * 16, 3, 1) is first
    grown = metadata._partitions(b"a" * 16, 5, 1)  # CreatePartitions
    assert [p.partition_index for p in grown] == [0, 1, 2, 3, 4]
    recreated = metadata._partitions(b"b" * 16, 3, 1)  # deleted and created again: a new topic id
    assert recreated is not first and [p.partition_index for p in recreated] == [0, 1, 2]


def test_the_cache_is_bounded():
    metadata._partitions.cache_clear()
    bound = metadata._partitions.cache_info().maxsize
    assert bound is not None
    first = metadata._partitions(b"first".ljust(16, b"."), 1, 1)
    for number in range(bound):
        metadata._partitions(number.to_bytes(16, "big"), 1, 1)
    assert metadata._partitions.cache_info().currsize == bound
    assert metadata._partitions(b"first".ljust(16, b"."), 1, 1) is not first  # the least recent went
