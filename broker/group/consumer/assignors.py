"""Server-side assignors: ``uniform`` and ``range`` (``group.consumer.assignors``; a client picks one
with ``group.remote.assignor``). Both are sticky, as Kafka's are: a partition stays with the member
that holds it in the current target unless balance requires it to move.

An assignor sees each member's subscribed topic ids and current target, and each topic's
partition count, and returns each member's new target. It is a pure function.

- uniform (Kafka's UniformAssignor): every member gets a share as equal as its subscriptions
  allow. Partitions kept where they are first; unowned ones go to the least-loaded subscribed
  member; then partitions move from the most- to the least-loaded member (along a chain of
  members where subscriptions differ) until no move makes the counts closer. With identical
  subscriptions that leaves counts differing by at most one
  and moves only what a newcomer must get (or a leaver left). Kafka balances per subscription
  pattern with its own tie-breaking, so which partition moves can differ from Kafka's choice;
  counts and stickiness are the same.
- range (Kafka's RangeAssignor): per topic, the subscribed members in member-id order get
  consecutive ranges (the first ``partitions % members`` one more), so members subscribed to
  co-partitioned topics get the same partition numbers of each; a member keeps partitions it holds
  up to its share of the topic.
"""

from __future__ import annotations

from dataclasses import dataclass

from .member import Assignment, clean

CLASS_NAMES = {  # Kafka's group.consumer.assignors lists class names; clients name them
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


@dataclass(frozen=True)
class MemberSpec:
    topics: frozenset[bytes]   # subscribed topic ids that exist
    current: Assignment        # the member's current target


def uniform(members: dict[str, MemberSpec], partitions: dict[bytes, int]) -> dict[str, Assignment]:
    owner: dict[tuple[bytes, int], str] = {}
    load: dict[str, set[tuple[bytes, int]]] = {member_id: set() for member_id in members}
    for member_id in sorted(members):  # keep what is still valid (sorted: a duplicate goes to one)
        spec = members[member_id]
        for topic_id, held in spec.current.items():
            if topic_id not in spec.topics:
                continue
            for partition in held:
                tp = (topic_id, partition)
                if partition < partitions.get(topic_id, 0) and tp not in owner:
                    owner[tp] = member_id
                    load[member_id].add(tp)
    eligible = {topic_id: sorted(m for m, spec in members.items() if topic_id in spec.topics)
                for topic_id in partitions}
    for topic_id in sorted(partitions):
        candidates = eligible[topic_id]
        if not candidates:
            continue
        for partition in range(partitions[topic_id]):
            tp = (topic_id, partition)
            if tp not in owner:
                chosen = min(candidates, key=lambda m: (len(load[m]), m))
                owner[tp] = chosen
                load[chosen].add(tp)
    _balance(load, eligible)
    return {member_id: _as_assignment(held) for member_id, held in load.items()}


def _balance(load: dict[str, set[tuple[bytes, int]]], eligible: dict[bytes, list[str]]) -> None:
    """While some member holds two or more partitions more than another it can hand work to, directly
    or along a chain of members (a gives b a partition of a topic b reads, b gives c one ...), move
    one partition along the shortest such chain. Direct moves come first, so with identical
    subscriptions only direct moves happen and each one is needed."""
    while True:
        for giver in sorted(load, key=lambda m: (-len(load[m]), m)):
            path = _shortest_chain(giver, load, eligible)
            if path:
                for holder, tp, taker in path:
                    load[holder].discard(tp)
                    load[taker].add(tp)
                break
        else:
            return


def _shortest_chain(giver, load, eligible) -> list[tuple[str, tuple[bytes, int], str]]:
    limit = len(load[giver]) - 2
    came_from: dict[str, tuple[str, tuple[bytes, int]]] = {}
    frontier, seen = [giver], {giver}
    while frontier:
        following = []
        for holder in frontier:
            # highest partitions move first, so the lower ones (held longest, usually) stay
            for tp in sorted(load[holder], reverse=True):
                for taker in eligible[tp[0]]:
                    if taker in seen:
                        continue
                    seen.add(taker)
                    came_from[taker] = (holder, tp)
                    if len(load[taker]) <= limit:
                        path, member = [], taker
                        while member != giver:
                            previous, moved = came_from[member]
                            path.append((previous, moved, member))
                            member = previous
                        return path
                    following.append(taker)
        frontier = following
    return []


def range_(members: dict[str, MemberSpec], partitions: dict[bytes, int]) -> dict[str, Assignment]:
    result: dict[str, dict[bytes, set[int]]] = {member_id: {} for member_id in members}
    for topic_id, count in sorted(partitions.items()):
        subscribed = sorted(m for m, spec in members.items() if topic_id in spec.topics)
        if not subscribed:
            continue
        base, extra = divmod(count, len(subscribed))
        quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(subscribed)}
        taken: set[int] = set()
        for m in subscribed:  # sticky: keep held partitions up to the member's share
            held = sorted(p for p in members[m].current.get(topic_id, ()) if p < count and p not in taken)
            kept = set(held[:quota[m]])
            taken |= kept
            result[m][topic_id] = kept
        free = iter(p for p in range(count) if p not in taken)
        for m in subscribed:
            mine = result[m][topic_id]
            while len(mine) < quota[m]:
                mine.add(next(free))
    return {member_id: clean(topics) for member_id, topics in result.items()}


ASSIGNORS = {"uniform": uniform, "range": range_}


def configured(setting: str) -> list[str]:
    """Assignor names of ``group.consumer.assignors`` (short names or Kafka's class names)."""
    names = [CLASS_NAMES.get(item.strip(), item.strip()) for item in setting.split(",") if item.strip()]
    unknown = [name for name in names if name not in ASSIGNORS]
    if unknown or not names:
        raise ValueError(f"group.consumer.assignors: unknown assignor(s) {unknown}; known: {sorted(ASSIGNORS)}")
    return names


def _as_assignment(held: set[tuple[bytes, int]]) -> Assignment:
    topics: dict[bytes, set[int]] = {}
    for topic_id, partition in held:
        topics.setdefault(topic_id, set()).add(partition)
    return clean(topics)
