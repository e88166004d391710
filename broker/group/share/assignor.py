"""Kafka's ``SimpleAssignor`` for share groups, as KIP-932 describes it: every member gets every
partition of the topics it subscribes to; the share-partition hands each record to one of them.

Deviation: Kafka 4.x's simple assignor spreads partitions over members when a topic has more
partitions than members subscribe to it; every member reading every partition delivers the same
records (each once), with more members per partition.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import records as r

NAME = "simple"  # as ShareGroupDescribe names it


def assign(members: Iterable[tuple[str, tuple[str, ...]]], topics: dict[str, tuple[bytes, int]]) -> dict[
        str, r.Partitions]:
    """member id -> its partitions, from (member id, subscribed topic names) and name -> (id, count)."""
    target: dict[str, r.Partitions] = {}
    for member_id, subscribed in members:
        target[member_id] = {topics[name][0]: tuple(range(topics[name][1]))
                             for name in sorted(subscribed) if name in topics}
    return target
