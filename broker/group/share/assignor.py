"""Kafka's simple assignor for share groups, as Kafka 4.4 balances it (seen on Kafka 4.4.0).

Per topic, among the members subscribing to it (in member id order): with no more members than
partitions, the partitions are dealt out, each to one member; with more members than partitions,
each member gets one partition and each partition is shared by about members / partitions of
them (three members on one partition all read it: the share-partition hands each record to one).
Deviation: Kafka's assignment is sticky (a member keeps what it had where the balance allows);
Weir's is recomputed from the member order, so a membership change may move partitions, which a
share group tolerates (in-flight records stay acknowledgeable by the member that holds them).
"""

from __future__ import annotations

from collections.abc import Iterable

from . import records as r

NAME = "simple"  # as ShareGroupDescribe names it


def assign(members: Iterable[tuple[str, tuple[str, ...]]], topics: dict[str, tuple[bytes, int]]) -> dict[
        str, r.Partitions]:
    """member id -> its partitions, from (member id, subscribed topic names) and name -> (id, count)."""
    subscriptions = dict(members)
    target: dict[str, r.Partitions] = {member_id: {} for member_id in subscriptions}
    for name in sorted({name for names in subscriptions.values() for name in names if name in topics}):
        topic_id, count = topics[name]
        subscribers = sorted(member_id for member_id, names in subscriptions.items() if name in names)
        if not count:
            continue
        shares: dict[str, list[int]] = {member_id: [] for member_id in subscribers}
        if len(subscribers) <= count:
            for partition in range(count):
                shares[subscribers[partition % len(subscribers)]].append(partition)
        else:
            for index, member_id in enumerate(subscribers):
                shares[member_id].append(index % count)
        for member_id, partitions in shares.items():
            target[member_id][topic_id] = tuple(partitions)
    return target
