"""The "consumer" embedded protocol: what members put in JoinGroup metadata and SyncGroup assignments.

Kafka's ``ConsumerProtocolSubscription`` (v0 topics and user data, v1 owned
partitions, v2 generation id, v3 rack id) and ``ConsumerProtocolAssignment``
(assigned partitions, user data), as construct declarations. Each starts with
an int16 version; a reader takes the fields of the versions it knows and
ignores what a newer writer appended, as Kafka's ConsumerProtocol does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3


@cache
def _formats() -> tuple[Any, Any]:
    """(Subscription, Assignment), compiled on first use: construct's import and compile take ~25 ms,
    which a producer-only program, or ``import weir.client``, should not pay."""
    import construct as c

    string = c.PascalString(c.Int16ub, "utf8")
    topic_partitions = c.PrefixedArray(c.Int32sb, c.Struct("topic" / string,
                                                           "partitions" / c.PrefixedArray(c.Int32sb, c.Int32sb)))
    subscription = c.Struct(
        "version" / c.Int16sb,
        "topics" / c.PrefixedArray(c.Int32sb, string),
        "user_data_length" / c.Int32sb,
        "user_data" / c.If(c.this.user_data_length >= 0, c.Bytes(c.this.user_data_length)),
        "owned_partitions" / c.If(c.this.version >= 1, topic_partitions),
        "generation_id" / c.If(c.this.version >= 2, c.Int32sb),
        "rack" / c.If(c.this.version >= 3, c.Struct(  # a nullable string: length -1 is null
            "length" / c.Int16sb,
            "value" / c.If(c.this.length >= 0, c.StringEncoded(c.Bytes(c.this.length), "utf8")),
        )),
    ).compile()
    assignment = c.Struct(
        "version" / c.Int16sb,
        "assigned_partitions" / topic_partitions,
        "user_data_length" / c.Int32sb,
        "user_data" / c.If(c.this.user_data_length >= 0, c.Bytes(c.this.user_data_length)),
    ).compile()
    return subscription, assignment


@dataclass
class MemberSubscription:
    topics: list[str]
    owned: dict[str, list[int]] = field(default_factory=dict)
    generation_id: int = -1
    user_data: bytes | None = None
    rack_id: str | None = None


def _partitions_out(mapping: dict[str, list[int]]) -> list[dict[str, object]]:
    return [{"topic": topic, "partitions": sorted(parts)} for topic, parts in sorted(mapping.items())]


def _partitions_in(entries: Iterable[Any] | None) -> dict[str, list[int]]:  # construct's parsed entries
    found: dict[str, list[int]] = {}
    for entry in entries or ():
        found.setdefault(entry.topic, []).extend(entry.partitions)
    return found


def encode_subscription(subscription: MemberSubscription) -> bytes:
    data = subscription.user_data
    rack = subscription.rack_id
    encoded: bytes = _formats()[0].build({
        "version": SUBSCRIPTION_VERSION, "topics": sorted(subscription.topics),
        "user_data_length": -1 if data is None else len(data), "user_data": data,
        "owned_partitions": _partitions_out(subscription.owned), "generation_id": subscription.generation_id,
        "rack": {"length": -1 if rack is None else len(rack.encode()), "value": rack}})
    return encoded


def decode_subscription(metadata: bytes) -> MemberSubscription:
    parsed = _formats()[0].parse(metadata)
    return MemberSubscription(
        topics=list(parsed.topics), owned=_partitions_in(parsed.owned_partitions),
        generation_id=parsed.generation_id if parsed.generation_id is not None else -1,
        user_data=parsed.user_data, rack_id=parsed.rack.value if parsed.rack is not None else None)


def encode_assignment(partitions: dict[str, list[int]], user_data: bytes | None = None) -> bytes:
    encoded: bytes = _formats()[1].build({"version": 0, "assigned_partitions": _partitions_out(partitions),
                                       "user_data_length": -1 if user_data is None else len(user_data),
                                       "user_data": user_data})
    return encoded


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    if not data:
        return {}  # a member the leader gave nothing (an empty SyncGroup answer)
    return _partitions_in(_formats()[1].parse(data).assigned_partitions)
