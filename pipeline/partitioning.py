"""The sink's keyed partition choice: the C one (pipeline/_murmur2.c) when built, else the client's.

Both compute the Java producer's ``toPositive(murmur2(key)) % partitions``; the C one
exists because hashing every key in Python was the exactly-once sink's largest cost.
"""

from __future__ import annotations

try:
    from ._murmur2 import partition_for_key
except ImportError:  # built optionally (setup.py): no C compiler, the Python hash
    from client.partitioner import partition_for_key

__all__ = ["partition_for_key"]
