"""Kafka's simple assignor for share groups, with Kafka 4.4's rules (read from its 4.4.0 jar and seen
on a 4.4.0 broker as members join one by one).

Each partition is shared by ``ceil(members / partitions)`` members (the *sharing*), so every member
gets at least one partition and, where the slots do not divide evenly, some members get one more:
three members on two partitions share each partition two ways and one member reads both; sixteen
on six give every partition three readers. Sticky: a member keeps the partitions it holds, apart
from those over its quota, those of a partition over its sharing (lowest member first, as Kafka's
order gives up), and those of topics it no longer subscribes to; then the partitions short of
readers are dealt to the members short of partitions, in turn.

When every member subscribes to the same topics the quotas count the partitions of all of them
together (Kafka's homogeneous builder); otherwise each topic is shared among its own subscribers
(the heterogeneous one).

Where Kafka walks hash sets, Weir walks a fixed order (members by id, partitions by topic name and
number): the same shape (how many readers each partition has, how many partitions each member
has), not necessarily the same member on the same partition. A member whose topics are gone loses
their partitions (Kafka's heterogeneous builder leaves partitions of a topic nobody subscribes to
any more in the old assignment).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from . import records as r

NAME = "simple"  # as ShareGroupDescribe names it

Unit = tuple[bytes, int]  # (topic id, partition)


def assign(members: Iterable[tuple[str, tuple[str, ...]]], topics: dict[str, tuple[bytes, int]],
           current: Mapping[str, r.Partitions | None] | None = None) -> dict[str, r.Partitions]:
    """member id -> its partitions, from (member id, subscribed topic names), name -> (id, count)
    and the members' present target assignments (``current``: what stickiness keeps)."""
    subscriptions = {member_id: tuple(sorted({name for name in names if name in topics}))
                     for member_id, names in members}
    member_ids = sorted(subscriptions)
    held: dict[str, set[Unit]] = {member_id: _units((current or {}).get(member_id)) for member_id in member_ids}
    target: dict[str, set[Unit]] = {member_id: set() for member_id in member_ids}
    if len(set(subscriptions.values())) <= 1:  # the homogeneous case: one pool of every partition
        names = next(iter(subscriptions.values()), ())
        pools = [(member_ids, [(topics[name][0], p) for name in names for p in range(topics[name][1])])]
    else:
        pools = [([m for m in member_ids if name in subscriptions[m]],
                  [(topics[name][0], p) for p in range(topics[name][1])])
                 for name in sorted({name for names in subscriptions.values() for name in names})]
    for pool_members, units in pools:
        for member_id, units_held in _share(pool_members, units, held).items():
            target[member_id] |= units_held
    return {member_id: _partitions(units) for member_id, units in target.items()}


def _share(members: list[str], units: list[Unit], held: dict[str, set[Unit]]) -> dict[str, set[Unit]]:
    """One pool: its partitions among its members, keeping what each holds where the quotas allow."""
    if not members or not units:
        return {}
    sharing = math.ceil(len(members) / len(units))
    # the member at position k gets ceil(q(k+1)) - ceil(qk) of the sharing x partitions slots (Kafka's
    # double arithmetic, which Python's floats reproduce)
    precise = sharing * len(units) / len(members)
    quota = {m: math.ceil(precise * (k + 1)) - math.ceil(precise * k) for k, m in enumerate(members)}
    in_pool = set(units)
    kept = {m: sorted(held[m] & in_pool) for m in members}
    for m in members:  # over its quota: the last ones go
        del kept[m][quota[m]:]
    readers: dict[Unit, list[str]] = {unit: [] for unit in units}
    for m in members:
        for unit in kept[m]:
            readers[unit].append(m)
    for unit, holders in readers.items():  # over the sharing: the lowest members give up
        while len(holders) > sharing:
            kept[holders.pop(0)].remove(unit)
    short = [m for m in members if len(kept[m]) < quota[m]]
    position, dealt_this_round = 0, False
    for unit in units:
        wanted = sharing - len(readers[unit])
        while wanted > 0 and short:
            if position >= len(short):
                if not dealt_this_round:
                    break  # every member still short already reads this partition
                position, dealt_this_round = 0, False
            member = short[position]
            if member in readers[unit]:
                position += 1
                continue
            kept[member].append(unit)
            readers[unit].append(member)
            wanted -= 1
            dealt_this_round = True
            if len(kept[member]) >= quota[member]:
                short.pop(position)
            else:
                position += 1
        if not short:
            break
    return {m: set(kept[m]) for m in members}


def _units(partitions: r.Partitions | None) -> set[Unit]:
    return {(topic_id, p) for topic_id, ps in (partitions or {}).items() for p in ps}


def _partitions(units: set[Unit]) -> r.Partitions:
    by_topic: dict[bytes, list[int]] = {}
    for topic_id, partition in sorted(units):
        by_topic.setdefault(topic_id, []).append(partition)
    return {topic_id: tuple(ps) for topic_id, ps in by_topic.items()}
