"""Partition assignors the group leader runs: range, roundrobin and cooperative-sticky.

Each takes the partition count of every subscribed topic and each member's
subscription, and returns member -> {topic: partitions}. Names and results
follow the Java client's assignors, so a group mixing our consumer and a Java
consumer agrees on who owns what.
"""

from __future__ import annotations

from collections import defaultdict

from weir.protocol.consumer_protocol import MemberSubscription

EAGER, COOPERATIVE = "eager", "cooperative"
Assignment = dict[str, dict[str, list[int]]]


def _member_order(subscriptions: dict[str, MemberSubscription]) -> list[str]:
    return sorted(subscriptions)


class RangeAssignor:
    """Per topic, consecutive ranges of partitions; the first members get one more when it does not divide."""
    name = "range"
    protocol = EAGER

    def assign(self, partitions: dict[str, int], subscriptions: dict[str, MemberSubscription]) -> Assignment:
        result: Assignment = {member: {} for member in subscriptions}
        for topic, count in sorted(partitions.items()):
            members = [m for m in _member_order(subscriptions) if topic in subscriptions[m].topics]
            if not members:
                continue
            share, extra = divmod(count, len(members))
            start = 0
            for i, member in enumerate(members):
                size = share + (1 if i < extra else 0)
                if size:
                    result[member][topic] = list(range(start, start + size))
                start += size
        return result


class RoundRobinAssignor:
    """Every partition of every topic in turn, to the next member subscribed to its topic."""
    name = "roundrobin"
    protocol = EAGER

    def assign(self, partitions: dict[str, int], subscriptions: dict[str, MemberSubscription]) -> Assignment:
        result: Assignment = {member: {} for member in subscriptions}
        members = _member_order(subscriptions)
        if not members:
            return result
        turn = 0
        for topic, count in sorted(partitions.items()):
            for partition in range(count):
                for _ in range(len(members)):
                    member = members[turn % len(members)]
                    turn += 1
                    if topic in subscriptions[member].topics:
                        result[member].setdefault(topic, []).append(partition)
                        break
        return result


class CooperativeStickyAssignor:
    """Balanced, keeping every partition where it is when it can (KIP-429).

    Sticky step: each member keeps the partitions it owns (while its quota allows),
    the rest go to the least-loaded eligible member. Cooperative step: a partition
    that moves to a new owner is left out of this round, so its old owner revokes it
    first and a follow-up rebalance hands it over; no partition is ever read by two
    members at once.

    Simplification: balance is by partition count per member (Java also weighs
    members' differing subscriptions with a more elaborate general algorithm);
    with equal subscriptions both reach the same balanced, sticky result.
    """
    name = "cooperative-sticky"
    protocol = COOPERATIVE

    def assign(self, partitions: dict[str, int], subscriptions: dict[str, MemberSubscription]) -> Assignment:
        members = _member_order(subscriptions)
        every = [(topic, p) for topic, count in sorted(partitions.items()) for p in range(count)]
        eligible = {tp: [m for m in members if tp[0] in subscriptions[m].topics] for tp in every}
        previous_owner: dict[tuple[str, int], str] = {}
        for member in sorted(members, key=lambda m: -subscriptions[m].generation_id):
            for topic, parts in subscriptions[member].owned.items():
                for p in parts:
                    tp = (topic, p)
                    if tp in eligible and member in eligible[tp]:
                        previous_owner.setdefault(tp, member)  # the highest generation's claim wins
        assignable = [tp for tp in every if eligible[tp]]
        quota_floor, extra = divmod(len(assignable), len(members)) if members else (0, 0)
        owned: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for tp in assignable:
            owner = previous_owner.get(tp)
            if owner is not None:
                owned[owner].append(tp)
        result: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
        unassigned = []
        over_quota_slots = extra
        for member in members:
            keep = owned.get(member, [])
            limit = quota_floor + (1 if over_quota_slots and len(keep) > quota_floor else 0)
            if len(keep) > quota_floor and over_quota_slots:
                over_quota_slots -= 1
            result[member] = keep[:limit]
            unassigned.extend(keep[limit:])
        taken = {tp for parts in result.values() for tp in parts}
        unassigned.extend(tp for tp in assignable if tp not in taken and tp not in unassigned)
        for tp in sorted(unassigned):
            member = min(eligible[tp], key=lambda m: (len(result[m]), m))
            result[member].append(tp)
        final: Assignment = {m: {} for m in members}
        for member, chosen in result.items():
            for tp in chosen:
                owner = previous_owner.get(tp)
                if owner is not None and owner != member:
                    continue  # revoked by its owner first; handed over in the next rebalance
                final[member].setdefault(tp[0], []).append(tp[1])
        return final


ASSIGNORS = {cls.name: cls for cls in (RangeAssignor, RoundRobinAssignor, CooperativeStickyAssignor)}
