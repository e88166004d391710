"""Where a record goes when the caller names no partition: the Java client's rules.

A keyed record goes to ``toPositive(murmur2(key)) % partitions`` so keys land on
the partitions the Java client (and every Kafka client that copies it) picks.
A record without a key sticks to one partition until ``batch_size`` bytes have
gone there, then the next sticky partition is drawn at random (KIP-480 and
KIP-794's uniform sticky partitioner): batches fill up instead of every
record opening its own.

Simplification: KIP-794's adaptive mode weighs partitions by their brokers'
queue lengths; with one broker per cluster here (or any cluster whose brokers
drain alike) that is the uniform draw.
"""

from __future__ import annotations

import array
import random
from typing import TYPE_CHECKING

from weir.protocol.record_builder import _arrow_value

if TYPE_CHECKING:
    from weir.protocol.record_builder import ArrowColumn

__all__ = ["StickyPartitioner", "murmur2", "partition_for_key", "partition_for_key_python", "partition_rows",
           "partition_rows_python"]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """MurmurHash2 as Kafka's ``Utils.murmur2`` computes it, as a signed int32."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    tail = length & ~3
    for i in range(0, tail, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    remaining = length - tail
    if remaining == 3:
        h ^= data[tail + 2] << 16
    if remaining >= 2:
        h ^= data[tail + 1] << 8
    if remaining >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key_python(key: bytes, num_partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


def partition_rows_python(keys: ArrowColumn, length: int, partitions: int, turn: int) -> tuple[list[bytes], int]:
    """The rows of an Arrow key column (``protocol.record_builder.arrow_column``) grouped by partition,
    each group the int32 row numbers (bytes) in row order: keyed rows by murmur2, null keys round-robin
    from ``turn`` + 1 (the last turn used, returned updated)."""
    if partitions <= 0:
        raise ValueError("partitions must be positive")
    groups = [array.array("i") for _ in range(partitions)]
    for row in range(length):
        key = _arrow_value(keys, row)
        if key is None:
            turn += 1
            groups[turn % partitions].append(row)
        else:
            groups[partition_for_key_python(key, partitions)].append(row)
    return [group.tobytes() for group in groups], turn


try:  # the C ones (client/_murmur2.c), built optionally by setup.py: hashing in Python was the sink's
    # largest cost and is a producer's with short keys
    from ._murmur2 import partition_for_key, partition_rows
except ImportError:
    partition_for_key, partition_rows = partition_for_key_python, partition_rows_python


class StickyPartitioner:
    """Per-topic sticky choice for records without a key."""

    def __init__(self, batch_size: int, rng: random.Random | None = None) -> None:
        self.batch_size = batch_size
        self._rng = rng or random.Random()
        self._sticky: dict[str, list[int]] = {}  # topic -> [partition, bytes produced to it]

    def partition(self, topic: str, num_partitions: int) -> int:
        state = self._sticky.get(topic)
        if state is None or state[0] >= num_partitions:
            state = self._sticky[topic] = [self._rng.randrange(num_partitions), 0]
        return state[0]

    def record_appended(self, topic: str, partition: int, size: int, num_partitions: int) -> None:
        """Count bytes sent to the sticky partition; past ``batch_size``, move on."""
        state = self._sticky.get(topic)
        if state is None or state[0] != partition:
            return
        state[1] += size
        if state[1] >= self.batch_size:
            state[0] = self._next(partition, num_partitions)
            state[1] = 0

    def _next(self, current: int, num_partitions: int) -> int:
        if num_partitions == 1:
            return 0
        choice = self._rng.randrange(num_partitions - 1)
        return choice if choice < current else choice + 1
