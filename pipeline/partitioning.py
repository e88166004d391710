"""The sink's keyed partition choice: the C one (pipeline/_murmur2.c) when built, else the client's.

Both compute the Java producer's ``toPositive(murmur2(key)) % partitions``; the C one
exists because hashing every key in Python was the exactly-once sink's largest cost.
"""

from __future__ import annotations

import array

from weir.protocol.record_builder import _arrow_value


def partition_rows_python(keys, length: int, partitions: int, turn: int) -> tuple[list[bytes], int]:
    """The rows of an Arrow key column (``protocol.record_builder.arrow_column``) grouped by partition,
    each group the int32 row numbers (bytes) in row order: keyed rows by murmur2, null keys round-robin
    from ``turn`` + 1 (the last turn used, returned updated). The C one is ``_murmur2.partition_rows``."""
    if partitions <= 0:
        raise ValueError("partitions must be positive")
    groups = [array.array("i") for _ in range(partitions)]
    for row in range(length):
        key = _arrow_value(keys, row)
        if key is None:
            turn += 1
            groups[turn % partitions].append(row)
        else:
            groups[partition_for_key(key, partitions)].append(row)
    return [group.tobytes() for group in groups], turn


try:
    from ._murmur2 import partition_for_key, partition_rows
except ImportError:  # built optionally (setup.py): no C compiler, the Python hash
    from weir.client.partitioner import partition_for_key
    partition_rows = partition_rows_python

__all__ = ["partition_for_key", "partition_rows", "partition_rows_python"]
