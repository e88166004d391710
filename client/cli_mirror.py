"""``weir-admin mirror check | carry-offsets``: the steps MirrorMaker 2 leaves to an operator moving
consumer groups from this cluster (``--bootstrap-server``, the source) to another (``--target``).

``check`` lists, for every group committed on the source (or the ``--group`` ones), each partition's
committed offset next to the offset MirrorMaker 2 translated onto the target (its
``sync.group.offsets.enabled``), and exits 1 while any has not arrived; ``--wait-ms`` polls until they
all have. Topic names on the target follow the replication policy: unchanged
(IdentityReplicationPolicy) or ``ALIAS.topic`` with ``--source-alias ALIAS`` (the default policy).

MirrorMaker 2 translates an offset only to the last offset sync at or before it, plus one, so a
group often resumes on the target well before where it stopped (it re-reads records, never skips
one). ``carry-offsets`` gives such a group its exact position where a topic was mirrored whole with
identical offsets (IdentityReplicationPolicy, no transaction markers shifting the copy): for a
group committed at N, the record at N-1 is read on both clusters and must be the same record (offset,
key, value, timestamp, headers); then N is committed for the group on the target. A partition whose
record differs, or is missing, keeps MirrorMaker 2's translation and is reported. It shows the plan
unless ``--execute`` is given, and refuses a target group with active members, as ``groups
reset-offsets`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from .admin import Admin
from .cli_output import emit
from .consumer import Consumer
from .errors import GroupIdNotFoundError, IllegalStateError
from .types import ConsumerRecord, OffsetAndMetadata, TopicPartition

POLL_SECONDS = 0.5  # between two looks at the target while --wait-ms runs


def target_topic(topic: str, args: argparse.Namespace) -> str:
    return f"{args.source_alias}.{topic}" if args.source_alias else topic


def _target_admin(args: argparse.Namespace) -> Admin:
    return Admin(args.target, default_api_timeout_ms=args.timeout_ms, request_timeout_ms=min(args.timeout_ms, 30000))


async def _source_groups(admin: Admin, args: argparse.Namespace) -> list[str]:
    if args.group:
        return list(args.group)
    return sorted(g.group_id for g in await admin.list_groups())


async def _positions(admin: Admin, target: Admin, groups: list[str], args: argparse.Namespace
                     ) -> list[dict[str, Any]]:
    """One row per (group, partition) committed on the source: both offsets and whether it arrived."""
    rows: list[dict[str, Any]] = []
    for group in groups:
        source = await admin.list_group_offsets(group)
        mirrored = await target.list_group_offsets(group)
        for tp, committed in sorted(source.items()):
            remote = TopicPartition(target_topic(tp.topic, args), tp.partition)
            translated = mirrored.get(remote)
            rows.append({"group": group, "topic": tp.topic, "partition": tp.partition,
                         "source_offset": committed.offset, "target_topic": remote.topic,
                         "target_offset": None if translated is None else translated.offset,
                         "arrived": translated is not None})
    return rows


async def mirror_check(admin: Admin, args: argparse.Namespace) -> None:
    deadline = time.monotonic() + args.wait_ms / 1000
    async with _target_admin(args) as target:
        groups = await _source_groups(admin, args)
        while True:
            rows = await _positions(admin, target, groups, args)
            if all(row["arrived"] for row in rows) or time.monotonic() >= deadline:
                break
            await asyncio.sleep(POLL_SECONDS)  # MirrorMaker 2 syncs group offsets on its own interval
    emit(args, {"ready": all(row["arrived"] for row in rows), "positions": rows},
         ["Group", "Topic", "Partition", "Source-Offset", "Target-Topic", "Target-Offset", "Status"],
         [[r["group"], r["topic"], r["partition"], r["source_offset"], r["target_topic"], r["target_offset"],
           "arrived" if r["arrived"] else "missing"] for r in rows])
    missing = [r for r in rows if not r["arrived"]]
    if missing:
        raise IllegalStateError(f"{len(missing)} group partition(s) have no translated offset on the target yet")


async def record_at(bootstrap: str, tp: TopicPartition, offset: int, timeout_ms: int) -> ConsumerRecord | None:
    """The first record at or after ``offset`` (read_committed), None when there is none yet."""
    async with Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="none",
                        request_timeout_ms=min(timeout_ms, 30000)) as consumer:
        end = (await consumer.end_offsets([tp]))[tp]
        if end <= offset:
            return None
        consumer.assign([tp])
        consumer.seek(tp, offset)
        deadline = time.monotonic() + timeout_ms / 1000
        while time.monotonic() < deadline:
            batch = await consumer.getmany(tp, timeout_ms=500, max_records=1)
            if batch.get(tp):
                return batch[tp][0]
        return None


def same_record(a: ConsumerRecord, b: ConsumerRecord) -> bool:
    return (a.offset, a.key, a.value, a.timestamp, a.headers) == (b.offset, b.key, b.value, b.timestamp, b.headers)


async def _exact_position(args: argparse.Namespace, tp: TopicPartition, offset: int) -> tuple[int | None, str]:
    """``offset`` when the record before it is the same on both clusters, else None and why not."""
    if offset == 0:
        return 0, "nothing consumed"
    remote = TopicPartition(target_topic(tp.topic, args), tp.partition)
    mine = await record_at(args.bootstrap_server, tp, offset - 1, args.timeout_ms)
    theirs = await record_at(args.target, remote, offset - 1, args.timeout_ms)
    if mine is None or mine.offset != offset - 1:
        return None, f"no record at {offset - 1} on the source (a transaction marker or deleted)"
    if theirs is None:
        return None, f"offset {offset - 1} has not been copied to the target"
    if not same_record(mine, theirs):
        return None, f"the target's record at {offset - 1} differs (offsets shifted: not an identical copy)"
    return offset, "verified"


async def mirror_carry_offsets(admin: Admin, args: argparse.Namespace) -> None:
    async with _target_admin(args) as target:
        try:
            state = (await target.describe_groups([args.group]))[args.group].state
        except GroupIdNotFoundError:
            state = "Dead"
        if state not in ("Empty", "Dead"):
            raise IllegalStateError(f"group {args.group!r} is {state} on the target: stop its consumers there first")
        plan: list[dict[str, Any]] = []
        exact: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, committed in sorted((await admin.list_group_offsets(args.group)).items()):
            position, reason = await _exact_position(args, tp, committed.offset)
            remote = TopicPartition(target_topic(tp.topic, args), tp.partition)
            if position is not None:
                exact[remote] = OffsetAndMetadata(position, committed.metadata)
            plan.append({"topic": tp.topic, "partition": tp.partition, "source_offset": committed.offset,
                         "new_target_offset": position, "result": reason})
        if args.execute and exact:
            await target.alter_group_offsets(args.group, exact)
    emit(args, {"group": args.group, "executed": args.execute, "offsets": plan},
         ["Group", "Topic", "Partition", "Source-Offset", "New-Target-Offset", "Result"],
         [[args.group, p["topic"], p["partition"], p["source_offset"], p["new_target_offset"], p["result"]]
          for p in plan])


def add_parser(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``mirror`` noun."""
    mirror = nouns.add_parser("mirror", help="check and complete MirrorMaker 2's group offsets on a target cluster")
    verbs = mirror.add_subparsers(dest="verb", required=True)
    for name, run, text in (("check", mirror_check, "every group's translated offsets arrived on the target?"),
                            ("carry-offsets", mirror_carry_offsets,
                             "commit a group's exact offsets on an identical copy (verified record by record)")):
        p = verbs.add_parser(name, help=text)
        p.add_argument("--target", required=True, metavar="HOST:PORT", help="the cluster MirrorMaker 2 writes to")
        p.add_argument("--source-alias", metavar="ALIAS",
                       help="remote topics are ALIAS.topic (DefaultReplicationPolicy); unset: the same names")
        if name == "check":
            p.add_argument("--group", action="append", help="only this group (repeatable); default: all groups")
            p.add_argument("--wait-ms", type=int, default=0, help="poll until every offset arrived, up to this long")
        else:
            p.add_argument("group")
            p.add_argument("--execute", action="store_true", help="commit the verified offsets (otherwise a plan)")
        p.set_defaults(run=run)
