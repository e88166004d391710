"""``weir-admin groups list | describe [--members [--verbose]] | delete | reset-offsets``, as
``kafka-consumer-groups`` does them. ``reset-offsets`` only shows the plan unless ``--execute`` is
given, and refuses a group that has active members.

``describe --members`` prints, per group: each member's id, instance id (a column only when
some member has one), host, client id and partition count; ``--verbose`` adds, for a
consumer-protocol group (KIP-848, described with ConsumerGroupDescribe), each member's epoch and
current assignment, the group's target assignment epoch and the member's target assignment, plus
an Upgraded column when classic members share the group (Kafka's tool shows the same); for a
classic group, the assignment. Assignments print as Kafka's tool prints them:
``topic:0,1,2;other:3``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .admin import EARLIEST, LATEST, Admin
from .admin.results import GroupDescription, MemberDescription
from .cli_output import emit
from .errors import GroupIdNotFoundError, IllegalStateError
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


async def groups_describe_members(admin: Admin, args: argparse.Namespace) -> None:
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


async def groups_list(admin: Admin, args: argparse.Namespace) -> None:
    groups = await admin.list_groups(states=args.state or None)
    # Type: classic, consumer (KIP-848), share (KIP-932) or streams (KIP-1071), as ListGroups v5 names it
    emit(args, groups, ["Group", "ProtocolType", "State", "Type"],
         [[g.group_id, g.protocol_type, g.state, g.group_type or ""] for g in groups])


async def _lag_rows(admin: Admin, group_id: str, assigned: set[TopicPartition]
                   ) -> list[tuple[TopicPartition, int | None, int]]:
    """(partition, committed offset or None, log end offset) for committed and assigned partitions."""
    committed = await admin.list_group_offsets(group_id)
    partitions = sorted(set(committed) | assigned)
    ends = await admin.list_offsets({tp: LATEST for tp in partitions}) if partitions else {}
    return [(tp, committed[tp].offset if tp in committed else None, ends[tp]) for tp in partitions]


async def groups_describe(admin: Admin, args: argparse.Namespace) -> None:
    if args.members:
        return await groups_describe_members(admin, args)
    data: list[dict[str, object]] = []  # JSON: each group and its offsets
    rows: list[list[object]] = []
    for group_id in args.groups:
        description = (await admin.describe_consumer_groups([group_id]))[group_id]
        owner = {tp: m for m in description.members for tp in m.assignment}
        offsets: list[dict[str, object]] = []
        for tp, offset, end in await _lag_rows(admin, group_id, set(owner)):
            member = owner.get(tp)
            lag = None if offset is None else max(end - offset, 0)
            offsets.append({"topic": tp.topic, "partition": tp.partition, "current_offset": offset,
                            "log_end_offset": end, "lag": lag, "member_id": member.member_id if member else None})
            rows.append([group_id, description.state, tp.topic, tp.partition, offset, end, lag,
                         member.member_id if member else None, member.client_host if member else None])
        if not offsets:
            rows.append([group_id, description.state] + [None] * 7)
        data.append({"group": description, "offsets": offsets})
    emit(args, data, ["Group", "State", "Topic", "Partition", "Current-Offset", "Log-End-Offset", "Lag",
                      "Consumer-Id", "Host"], rows)


async def groups_delete(admin: Admin, args: argparse.Namespace) -> None:
    await admin.delete_groups(args.groups)
    emit(args, {"deleted": args.groups}, ["Group", "Result"], [[g, "deleted"] for g in args.groups])


async def groups_reset_offsets(admin: Admin, args: argparse.Namespace) -> None:
    try:
        state = (await admin.describe_groups([args.group]))[args.group].state
    except GroupIdNotFoundError:
        state = "Dead"
    if state not in ("Empty", "Dead"):
        raise IllegalStateError(f"offsets can only be reset while group {args.group!r} is inactive, "
                                f"but it is {state}")
    partitions = await reset_partitions(admin, args, admin.list_group_offsets)
    targets = await reset_targets(admin, args, partitions)
    if args.execute:
        await admin.alter_group_offsets(args.group, targets)
    plan = [{"topic": tp.topic, "partition": tp.partition, "new_offset": off} for tp, off in sorted(targets.items())]
    emit(args, {"group": args.group, "executed": args.execute, "offsets": plan},
         ["Group", "Topic", "Partition", "New-Offset"],
         [[args.group, tp.topic, tp.partition, off] for tp, off in sorted(targets.items())])
    if not args.execute and not args.json:
        print("(dry run: add --execute to apply)", file=sys.stderr)


async def reset_targets(admin: Admin, args: argparse.Namespace, partitions: list[TopicPartition]
                        ) -> dict[TopicPartition, int]:
    """The new offset of each partition (``--to-earliest``, ``--to-latest``, ``--to-offset``)."""
    if args.to_earliest or args.to_latest:
        return await admin.list_offsets({tp: EARLIEST if args.to_earliest else LATEST for tp in partitions})
    # As kafka-consumer-groups and kafka-share-groups: an offset outside [earliest, latest] is moved to
    # the nearest bound.
    earliest = await admin.list_offsets({tp: EARLIEST for tp in partitions})
    latest = await admin.list_offsets({tp: LATEST for tp in partitions})
    return {tp: min(max(args.to_offset, earliest[tp]), latest[tp]) for tp in partitions}


async def reset_partitions(admin: Admin, args: argparse.Namespace,
                           group_offsets: Callable[[str], Awaitable[Mapping[TopicPartition, object]]]
                           ) -> list[TopicPartition]:
    """The partitions ``--topic`` names (every partition of a bare topic name), or with
    ``--all-topics`` every partition the group has offsets for (``group_offsets``)."""
    if args.all_topics:
        return sorted(await group_offsets(args.group))
    found: list[TopicPartition] = []
    for spec in args.topic:
        name, _, indexes = spec.partition(":")
        if indexes:
            found += [TopicPartition(name, int(p)) for p in indexes.split(",")]
        else:
            found += [TopicPartition(name, p.partition)
                      for p in (await admin.describe_topics([name]))[name].partitions]
    return found


def add_parser(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``groups`` noun."""
    groups = nouns.add_parser("groups", help="list, describe, delete consumer groups and reset their offsets")
    verbs = groups.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("list")
    p.add_argument("--state", action="append", help="only groups in this state (repeatable)")
    p.set_defaults(run=groups_list)
    p = verbs.add_parser("describe", help="committed offsets, log end offsets, lag and members")
    p.add_argument("groups", nargs="+")
    p.add_argument("--members", action="store_true", help="the members instead (epochs with --verbose)")
    p.add_argument("--verbose", action="store_true", help="with --members: assignments, epochs, targets")
    p.set_defaults(run=groups_describe)
    p = verbs.add_parser("delete")
    p.add_argument("groups", nargs="+")
    p.set_defaults(run=groups_delete)
    p = verbs.add_parser("reset-offsets", help="move an inactive group's committed offsets")
    add_reset_arguments(p)
    p.set_defaults(run=groups_reset_offsets)


def add_reset_arguments(p: argparse.ArgumentParser) -> None:
    """A reset's group, scope (``--topic`` / ``--all-topics``), target and ``--execute``."""
    p.add_argument("group")
    scope = p.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]")
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has offsets for")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-offset", type=int)
    p.add_argument("--execute", action="store_true", help="apply the plan (otherwise only show it)")
