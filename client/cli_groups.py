"""``weir-admin groups describe --members [--verbose]``: a group's members, as
``kafka-consumer-groups --describe --members [--verbose]`` prints them.

Per group: each member's id, instance id (a column only when some member has one), host, client id
and partition count; ``--verbose`` adds, for a consumer-protocol group (KIP-848, described with
ConsumerGroupDescribe), each member's epoch and current assignment, the group's target assignment
epoch and the member's target assignment, plus an Upgraded column when classic members share the
group (Kafka's tool shows the same); for a classic group, the assignment. Assignments print as
Kafka's tool prints them: ``topic:0,1,2;other:3``.
"""

from __future__ import annotations

from typing import Any

from .admin import Admin
from .admin.results import GroupDescription, MemberDescription
from .types import TopicPartition


def assignment_text(partitions: list[TopicPartition] | None) -> str | None:
    if not partitions:
        return None
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ";".join(sorted(f"{topic}:{','.join(str(p) for p in sorted(ps))}" for topic, ps in by_topic.items()))


def member_table(group: GroupDescription, verbose: bool) -> tuple[list[str], list[list[Any]]]:
    static = any(m.group_instance_id for m in group.members)
    mixed = len({m.upgraded for m in group.members} - {None}) > 1
    headers = ["Group", "Consumer-Id"] + (["Group-Instance-Id"] if static else []) + ["Host", "Client-Id",
                                                                                       "#Partitions"]
    consumer = group.group_type == "consumer"
    if verbose:
        headers += ["Current-Epoch", "Current-Assignment", "Target-Epoch", "Target-Assignment"] if consumer \
            else ["Assignment"]
        headers += ["Upgraded"] if consumer and mixed else []
    rows = []
    for m in sorted(group.members, key=lambda m: (-len(m.assignment), m.member_id)):
        row: list[Any] = [group.group_id, m.member_id] + ([m.group_instance_id or ""] if static else []) + [
            m.client_host, m.client_id, len(m.assignment)]
        if verbose:
            row += _verbose(group, m) if consumer else [assignment_text(m.assignment)]
            row += [str(m.upgraded).lower()] if consumer and mixed else []
        rows.append(row)
    return headers, rows


def _verbose(group: GroupDescription, m: MemberDescription) -> list[Any]:
    return [m.member_epoch, assignment_text(m.assignment), group.target_assignment_epoch,
            assignment_text(m.target_assignment)]


async def groups_describe_members(admin: Admin, args: Any, emit: Any) -> None:
    described = await admin.describe_consumer_groups(args.groups)
    if args.json:
        emit(args, list(described.values()), [], [])
        return
    for index, group in enumerate(described.values()):
        if index:
            print()
        if not group.members:
            print(f"Consumer group '{group.group_id}' has no active members.")
            continue
        emit(args, group, *member_table(group, args.verbose))
