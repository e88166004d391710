"""``weir-admin share-groups list | describe [--members | --state] [--verbose] | reset-offsets |
delete-offsets | delete``: share groups (KIP-932), with the rows ``kafka-share-groups`` prints.

- ``list``: the share groups (``--state``: with their states).
- ``describe``: each share-partition's start offset and lag (``--verbose``: and leader epoch);
  ``--members``: each member's id, host, client id, partition count and assignment
  (``--verbose``: and epoch); ``--state``: the coordinator, state and member count
  (``--verbose``: and the group and assignment epochs).
- ``reset-offsets``: as ``groups reset-offsets``, only the plan unless ``--execute``, and only
  while the group has no members (the coordinator refuses otherwise, as Kafka's tool does).
- ``delete-offsets``: drop the group's state for whole topics, one Successful/Error row per topic.
- ``delete``: empty share groups.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .admin import Admin
from .admin.results import ShareGroupDescription
from .cli_groups import add_reset_arguments, assignment_text, reset_partitions, reset_targets
from .cli_output import emit
from .errors import GroupIdNotFoundError, NonEmptyGroupError


async def share_groups_list(admin: Admin, args: argparse.Namespace) -> None:
    groups = await admin.list_groups(types=["share"])
    if args.state:
        emit(args, groups, ["GROUP", "STATE"], [[g.group_id, g.state] for g in groups])
    elif args.json:
        emit(args, [g.group_id for g in groups], [], [])
    else:
        for group in groups:
            print(group.group_id)


async def share_groups_describe(admin: Admin, args: argparse.Namespace) -> None:
    described = await admin.describe_share_groups(args.groups)
    data: list[object] = []
    for index, group in enumerate(described.values()):
        if index and not args.json:
            print()
        if args.state:
            data.append(group)
            _print(args, *_state_table(admin, group, args.verbose))
        elif args.members:
            data.append(group)
            if not group.members and not args.json:
                print(f"Share group '{group.group_id}' has no active members.")
                continue
            _print(args, *_member_table(group, args.verbose))
        else:
            offsets = await admin.list_share_group_offsets(group.group_id)
            data.append({"group": group.group_id, "offsets": [
                {"topic": tp.topic, "partition": tp.partition, "start_offset": o.start_offset,
                 "leader_epoch": o.leader_epoch, "lag": o.lag} for tp, o in offsets.items()]})
            if not offsets and not args.json:
                print(f"Share group '{group.group_id}' has no offset information.")
                continue
            headers = ["GROUP", "TOPIC", "PARTITION"] + (["LEADER-EPOCH"] if args.verbose else []) + [
                "START-OFFSET", "LAG"]
            rows = [[group.group_id, tp.topic, tp.partition] + ([_known(o.leader_epoch)] if args.verbose else [])
                    + [_known(o.start_offset), _known(o.lag)] for tp, o in offsets.items()]
            _print(args, headers, rows)
    if args.json:
        emit(args, data, [], [])


def _print(args: argparse.Namespace, headers: list[str], rows: list[list[Any]]) -> None:
    if not args.json:
        emit(args, None, headers, rows)


def _known(value: int) -> int | None:
    """-1 (not started, or not reported) prints as Kafka's tool prints it: ``-``."""
    return None if value < 0 else value


def _state_table(admin: Admin, group: ShareGroupDescription, verbose: bool) -> tuple[list[str], list[list[Any]]]:
    node = admin.cluster.nodes.get(group.coordinator_id)
    coordinator = f"{node.host}:{node.port}  ({node.node_id})" if node else f"({group.coordinator_id})"
    headers = ["GROUP", "COORDINATOR (ID)", "STATE"] + (["GROUP-EPOCH", "ASSIGNMENT-EPOCH"] if verbose else []) + [
        "#MEMBERS"]
    row = [group.group_id, coordinator, group.state] + ([group.group_epoch, group.assignment_epoch] if verbose
                                                        else []) + [len(group.members)]
    return headers, [row]


def _member_table(group: ShareGroupDescription, verbose: bool) -> tuple[list[str], list[list[Any]]]:
    headers = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"] + (["MEMBER-EPOCH"] if verbose else []) + [
        "ASSIGNMENT"]
    rows = [[group.group_id, m.member_id, m.client_host, m.client_id, len(m.assignment)]
            + ([m.member_epoch] if verbose else []) + [assignment_text(m.assignment) or ""]
            for m in sorted(group.members, key=lambda m: (-len(m.assignment), m.member_id))]
    return headers, rows


async def share_groups_reset_offsets(admin: Admin, args: argparse.Namespace) -> None:
    try:
        members = (await admin.describe_share_groups([args.group]))[args.group].members
    except GroupIdNotFoundError:
        members = []
    if members:  # the coordinator would refuse the alter too; a dry run says so as Kafka's tool does
        raise NonEmptyGroupError(f"Share group '{args.group}' is not empty.")
    partitions = await reset_partitions(admin, args, admin.list_share_group_offsets)
    targets = await reset_targets(admin, args, partitions)
    if args.execute:
        await admin.alter_share_group_offsets(args.group, targets)
    emit(args, {"group": args.group, "executed": args.execute, "offsets": [
        {"topic": tp.topic, "partition": tp.partition, "new_offset": off} for tp, off in sorted(targets.items())]},
         ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
         [[args.group, tp.topic, tp.partition, off] for tp, off in sorted(targets.items())])
    if not args.execute and not args.json:
        print("(dry run: add --execute to apply)", file=sys.stderr)


async def share_groups_delete_offsets(admin: Admin, args: argparse.Namespace) -> None:
    results = await admin.delete_share_group_offsets(args.group, args.topic)
    emit(args, {t: None if e is None else str(e) for t, e in results.items()}, ["TOPIC", "STATUS"],
         [[t, "Successful" if e is None else f"Error: {e}"] for t, e in sorted(results.items())])


async def share_groups_delete(admin: Admin, args: argparse.Namespace) -> None:
    await admin.delete_groups(args.groups)
    emit(args, {"deleted": args.groups}, ["GROUP", "STATUS"], [[g, "Successful"] for g in args.groups])


def add_parser(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``share-groups`` noun."""
    groups = nouns.add_parser("share-groups", help="list, describe, delete share groups (KIP-932), move their "
                              "start offsets")
    verbs = groups.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("list")
    p.add_argument("--state", action="store_true", help="with each group's state")
    p.set_defaults(run=share_groups_list)
    p = verbs.add_parser("describe", help="start offsets and lag, members (--members) or state (--state)")
    p.add_argument("groups", nargs="+")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="the members and their assignments")
    view.add_argument("--state", action="store_true", help="the coordinator, state and member count")
    p.add_argument("--verbose", action="store_true", help="leader epochs, member epochs, group epochs")
    p.set_defaults(run=share_groups_describe)
    p = verbs.add_parser("reset-offsets", help="move an inactive share group's start offsets")
    add_reset_arguments(p)
    p.set_defaults(run=share_groups_reset_offsets)
    p = verbs.add_parser("delete-offsets", help="drop an inactive share group's state for topics")
    p.add_argument("group")
    p.add_argument("--topic", action="append", required=True)
    p.set_defaults(run=share_groups_delete_offsets)
    p = verbs.add_parser("delete")
    p.add_argument("groups", nargs="+")
    p.set_defaults(run=share_groups_delete)
