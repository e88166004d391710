"""A classic consumer group's state: members, generation, selected protocol.

Pure bookkeeping with Kafka's rules (``ClassicGroup``): the legal state
transitions, protocol selection by member vote, leader choice, static
membership (group.instance.id -> member id), and the member checks that
OffsetCommit, TxnOffsetCommit, Heartbeat and SyncGroup share. Timers, parked
responses and persistence belong to the coordinator (``coordinator.py``).
"""

from __future__ import annotations

import asyncio
import enum
from collections import Counter
from dataclasses import dataclass, field

from weir.protocol.errors import Errors, KafkaError

from ..clock import Timer


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState
LEGAL_PREVIOUS = {
    _S.EMPTY: {_S.PREPARING_REBALANCE},
    _S.PREPARING_REBALANCE: {_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY},
    _S.COMPLETING_REBALANCE: {_S.PREPARING_REBALANCE},
    _S.STABLE: {_S.COMPLETING_REBALANCE},
    _S.DEAD: {_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD},
}

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    # a parked JoinGroup / SyncGroup answer; set while the member waits
    awaiting_join: asyncio.Future | None = None
    awaiting_sync: asyncio.Future | None = None
    session_timer: Timer | None = field(default=None, repr=False)

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name, _metadata in self.protocols if name in candidates)


@dataclass(frozen=True)
class JoinResult:
    error: Errors
    member_id: str = ""
    generation: int = -1
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # leader only


@dataclass(frozen=True)
class SyncResult:
    error: Errors
    assignment: bytes = b""


class ClassicGroup:
    def __init__(self, group_id: str, now_ms: int):
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.state_timestamp = now_ms
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: set[str] = set()    # told MEMBER_ID_REQUIRED, not joined yet
        self.pending_sync: set[str] = set()       # joined this generation, not synced yet
        self.initial_join = False                 # this rebalance waits out group.initial.rebalance.delay.ms
        self.new_member_added = False             # a member arrived during that delay
        self.join_timer: Timer | None = None
        self.sync_timer: Timer | None = None

    # ------------------------------------------------------------------ state

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in LEGAL_PREVIOUS[target]:
            raise RuntimeError(f"group {self.group_id}: illegal transition {self.state.value} -> {target.value}")
        self.state = target
        self.state_timestamp = now_ms

    # ------------------------------------------------------------------ members

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """A static member restarted: same member, new member id (the old id is fenced)."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def validate_member(self, member_id: str, instance_id: str | None) -> Member:
        """UNKNOWN_MEMBER_ID, or FENCED_INSTANCE_ID for a static member whose id was replaced."""
        if instance_id is not None:
            known = self.static_members.get(instance_id)
            if known is None:
                raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"unknown group.instance.id {instance_id}")
            if known != member_id:
                raise KafkaError(Errors.FENCED_INSTANCE_ID,
                                 f"instance {instance_id} is now member {known}, not {member_id}")
        member = self.members.get(member_id)
        if member is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"unknown member {member_id!r}")
        return member

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def all_members_joined(self) -> bool:
        return self.awaiting_join_count() == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ------------------------------------------------------------------ protocols

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """May a member with these protocols join? (INCONSISTENT_GROUP_PROTOCOL otherwise.)"""
        if not protocol_type or not protocols:
            return False
        if self.is_in(GroupState.EMPTY) or not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        common = self.candidate_protocols()
        return any(name in common for name, _metadata in protocols)

    def candidate_protocols(self) -> set[str]:
        counts = Counter(name for m in self.members.values() for name in {n for n, _ in m.protocols})
        return {name for name, count in counts.items() if count == len(self.members)}

    def select_protocol(self) -> str:
        """Each member votes for its first choice among the common protocols; most votes wins."""
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        return votes.most_common(1)[0][0]

    def current_generation(self, member: Member) -> JoinResult:
        """The JoinGroup answer for a member of this generation (the leader also gets everyone's metadata)."""
        is_leader = member.member_id == self.leader_id
        return JoinResult(Errors.NONE, member.member_id, self.generation, self.protocol_name,
                          self.leader_id or "", self.member_metadata() if is_leader else [])

    def member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        """What the leader gets to compute the assignment from."""
        protocol = self.protocol_name
        assert protocol is not None, "a generation has its protocol"
        return [(m.member_id, m.group_instance_id, m.metadata(protocol))
                for m in self.members.values()]

    def subscribed_topics(self) -> set[str] | None:
        """Topics a consumer group's members subscribe to; None when unknown (then: all)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            try:
                parsed = parse_subscription_topics(member.metadata(self.protocol_name))
            except KeyError:  # the member changed protocols in a rebalance still going on
                return None
            if parsed is None:
                return None
            topics.update(parsed)
        return topics

    # ------------------------------------------------------------------ offset commits

    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation: int,
                               transactional: bool) -> None:
        """Kafka's rules for who may commit a group's offsets (OffsetCommit and, KIP-447, TxnOffsetCommit)."""
        if self.is_in(GroupState.DEAD):
            raise KafkaError(Errors.COORDINATOR_NOT_AVAILABLE)
        if generation < 0 and self.is_in(GroupState.EMPTY):
            return  # the admin client, or a consumer using assign(): allowed while nobody is a member
        if generation >= 0 or member_id or instance_id is not None:
            self.validate_member(member_id, instance_id)
            if generation != self.generation:
                raise KafkaError(Errors.ILLEGAL_GENERATION,
                                 f"generation {generation} is not the group's {self.generation}")
        elif not transactional:
            # no member id and no generation (old clients, assign()): only while the group is empty.
            # TxnOffsetCommit v0-2 carries neither, so it is let through, as in Kafka.
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, "the group has members")
        if not transactional and self.is_in(GroupState.COMPLETING_REBALANCE):
            raise KafkaError(Errors.REBALANCE_IN_PROGRESS)


def parse_subscription_topics(metadata: bytes) -> list[str] | None:
    """Topics of a ConsumerProtocolSubscription (int16 version, then an int32-counted string array)."""
    if len(metadata) < 6:
        return None
    try:
        view = memoryview(metadata)
        count = int.from_bytes(view[2:6], "big", signed=True)
        position, topics = 6, []
        for _ in range(count):
            length = int.from_bytes(view[position:position + 2], "big", signed=True)
            position += 2
            if length < 0 or position + length > len(view):
                return None
            topics.append(bytes(view[position:position + length]).decode("utf8"))
            position += length
        return topics
    except (UnicodeDecodeError, ValueError):
        return None
