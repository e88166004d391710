"""A classic group as a GroupMetadata record in ``__consumer_offsets`` (key version 2, value v3), and back."""

from __future__ import annotations

from ..coordinator import records
from .classic import ClassicGroup, GroupState, Member


def group_key(group_id: str) -> bytes:
    return records.GroupMetadataKey.build({"version": records.GROUP_METADATA_KEY_VERSION, "group": group_id})


def group_record(group: ClassicGroup, assignments: dict[str, bytes]) -> tuple[bytes, bytes]:
    """The group's generation, protocol, leader and members, each with its subscription and assignment."""
    value = records.GroupMetadataValue.build({
        "version": records.GROUP_METADATA_VALUE_VERSION, "protocol_type": group.protocol_type or "",
        "generation": group.generation, "protocol": group.protocol_name, "leader": group.leader_id,
        "current_state_timestamp": group.state_timestamp,
        "members": [{
            "member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
            "client_host": m.client_host, "rebalance_timeout": m.rebalance_timeout_ms,
            "session_timeout": m.session_timeout_ms,
            "subscription": m.metadata(group.protocol_name) if group.protocol_name else b"",
            "assignment": assignments.get(m.member_id, b""),
        } for m in group.members.values()]})
    return group_key(group.group_id), value


def group_from_record(group_id: str, value: bytes | None, now_ms: int) -> ClassicGroup | None:
    """A replayed group: Stable with its members (who must then heartbeat), or Empty; None for a tombstone."""
    if value is None:
        return None
    data = records.GroupMetadataValue.parse(value)
    group = ClassicGroup(group_id, data.current_state_timestamp or now_ms)
    group.generation = data.generation
    group.protocol_type = data.protocol_type
    group.protocol_name = data.protocol
    for m in data.members:
        protocols = [(data.protocol, m.subscription)] if data.protocol is not None else []
        rebalance_timeout = m.rebalance_timeout if m.rebalance_timeout is not None else m.session_timeout
        group.add(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, rebalance_timeout,
                         m.session_timeout, data.protocol_type, protocols, m.assignment))
    group.leader_id = data.leader
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY
    return group
