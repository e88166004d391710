"""``weir-admin``: Kafka's admin tools (kafka-topics, kafka-consumer-groups, kafka-transactions) without a JVM.

    weir-admin [--bootstrap-server HOST:PORT] [--json] GROUP COMMAND ...

    topics        list | describe | create | delete | alter-config | add-partitions
    groups        list | describe [--members [--verbose]] | delete | reset-offsets
    transactions  list | describe | describe-producers | find-hanging | abort
    cluster       describe
    acls          list | add | remove
    faults        error | delay | disconnect | status | clear | pause | resume | disk-full | disk-ok

Tables for people, ``--json`` for machines. A broker error prints its Kafka
error name and exits 1; a usage error exits 2. As ``kafka-consumer-groups``,
``groups reset-offsets`` only shows the plan unless ``--execute`` is given,
and refuses a group that has active members. As ``kafka-transactions``,
``find-hanging`` needs ``--topic`` or ``--broker-id`` and looks only at
transactions older than ``--max-transaction-timeout`` minutes (15 by default).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from typing import Any, TypedDict

from .admin import (EARLIEST, LATEST, AbortTransactionSpec, Admin, AlterConfigOp, ConfigResource, NewTopic,
                    OpType)
from . import cli_acls, cli_faults, cli_groups, cli_users
from .cli_output import Command, print_json, print_table
from .errors import GroupIdNotFoundError, IllegalStateError, KafkaException
from .java_config import security_keywords
from .admin.results import TopicDescription
from .types import TopicPartition


def emit(args: argparse.Namespace, data: object, headers: list[str], rows: Sequence[Sequence[object]]) -> None:
    if args.json:
        print_json(data)
    else:
        print_table(headers, rows)


def _key_value(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    return name, value


# ---------------------------------------------------------------------- topics

async def topics_list(admin: Admin, args: argparse.Namespace) -> None:
    names = await admin.list_topics(include_internal=args.include_internal)
    emit(args, names, ["Topic"], [[n] for n in names])


class _TopicData(TypedDict):
    topic: TopicDescription
    configs: dict[str, str | None]  # the topic's non-default configs


async def topics_describe(admin: Admin, args: argparse.Namespace) -> None:
    names = args.topics or await admin.list_topics()
    descriptions = await admin.describe_topics(names)
    configs = await admin.describe_configs([ConfigResource.topic(n) for n in names]) if names else {}
    data: list[_TopicData] = []
    for name in names:
        overrides = {k: e.value for k, e in configs[ConfigResource.topic(name)].items() if not e.is_default}
        data.append({"topic": descriptions[name], "configs": overrides})
    rows = [[d["topic"].name, p.partition, p.leader, p.replicas, p.isr,
             ",".join(f"{k}={v}" for k, v in sorted(d["configs"].items())) if p.partition == 0 else ""]
            for d in data for p in d["topic"].partitions]
    emit(args, data, ["Topic", "Partition", "Leader", "Replicas", "Isr", "Configs"], rows)


async def topics_create(admin: Admin, args: argparse.Namespace) -> None:
    await admin.create_topics([NewTopic(args.topic, args.partitions, args.replication_factor, dict(args.config))],
                              validate_only=args.validate_only)
    verb = "is valid" if args.validate_only else "created"
    emit(args, {"topic": args.topic, "validate_only": args.validate_only}, ["Topic", "Result"],
         [[args.topic, verb]])


async def topics_delete(admin: Admin, args: argparse.Namespace) -> None:
    await admin.delete_topics(args.topics)
    emit(args, {"deleted": args.topics}, ["Topic", "Result"], [[t, "deleted"] for t in args.topics])


async def topics_add_partitions(admin: Admin, args: argparse.Namespace) -> None:
    await admin.create_partitions({args.topic: args.total}, validate_only=args.validate_only)
    emit(args, {"topic": args.topic, "partitions": args.total}, ["Topic", "Partitions"], [[args.topic, args.total]])


async def topics_alter_config(admin: Admin, args: argparse.Namespace) -> None:
    ops = ([AlterConfigOp(k, v, OpType.SET) for k, v in args.set] +
           [AlterConfigOp(k, None, OpType.DELETE) for k in args.delete] +
           [AlterConfigOp(k, v, OpType.APPEND) for k, v in args.append] +
           [AlterConfigOp(k, v, OpType.SUBTRACT) for k, v in args.subtract])
    resource = ConfigResource.topic(args.topic)
    await admin.incremental_alter_configs({resource: ops}, validate_only=args.validate_only)
    entries = (await admin.describe_configs([resource]))[resource]
    changed = sorted({op.name for op in ops})
    emit(args, {name: entries[name] for name in changed if name in entries},
         ["Config", "Value", "Source"],
         [[n, entries[n].value, entries[n].source] for n in changed if n in entries])


# ---------------------------------------------------------------------- groups

async def groups_list(admin: Admin, args: argparse.Namespace) -> None:
    groups = await admin.list_groups(states=args.state or None)
    emit(args, groups, ["Group", "ProtocolType", "State"], [[g.group_id, g.protocol_type, g.state] for g in groups])


async def _lag_rows(admin: Admin, group_id: str, assigned: set[TopicPartition]
                   ) -> list[tuple[TopicPartition, int | None, int]]:
    """(partition, committed offset or None, log end offset) for committed and assigned partitions."""
    committed = await admin.list_group_offsets(group_id)
    partitions = sorted(set(committed) | assigned)
    ends = await admin.list_offsets({tp: LATEST for tp in partitions}) if partitions else {}
    return [(tp, committed[tp].offset if tp in committed else None, ends[tp]) for tp in partitions]


async def groups_describe(admin: Admin, args: argparse.Namespace) -> None:
    if args.members:
        return await cli_groups.groups_describe_members(admin, args, emit)
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
    partitions = await _reset_partitions(admin, args)
    if args.to_earliest or args.to_latest:
        targets = await admin.list_offsets({tp: EARLIEST if args.to_earliest else LATEST for tp in partitions})
    else:
        # As kafka-consumer-groups: an offset outside [earliest, latest] is moved to the nearest bound.
        earliest = await admin.list_offsets({tp: EARLIEST for tp in partitions})
        latest = await admin.list_offsets({tp: LATEST for tp in partitions})
        targets = {tp: min(max(args.to_offset, earliest[tp]), latest[tp]) for tp in partitions}
    if args.execute:
        await admin.alter_group_offsets(args.group, targets)
    plan = [{"topic": tp.topic, "partition": tp.partition, "new_offset": off} for tp, off in sorted(targets.items())]
    emit(args, {"group": args.group, "executed": args.execute, "offsets": plan},
         ["Group", "Topic", "Partition", "New-Offset"],
         [[args.group, tp.topic, tp.partition, off] for tp, off in sorted(targets.items())])
    if not args.execute and not args.json:
        print("(dry run: add --execute to apply)", file=sys.stderr)


async def _reset_partitions(admin: Admin, args: argparse.Namespace) -> list[TopicPartition]:
    if args.all_topics:
        return sorted(await admin.list_group_offsets(args.group))
    found: list[TopicPartition] = []
    for spec in args.topic:
        name, _, indexes = spec.partition(":")
        if indexes:
            found += [TopicPartition(name, int(p)) for p in indexes.split(",")]
        else:
            found += [TopicPartition(name, p.partition)
                      for p in (await admin.describe_topics([name]))[name].partitions]
    return found


# ---------------------------------------------------------------------- transactions

async def transactions_list(admin: Admin, args: argparse.Namespace) -> None:
    listed = await admin.list_transactions(states=args.state, producer_ids=args.producer_id,
                                           min_duration_ms=args.duration_filter)
    emit(args, listed, ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
         [[t.transactional_id, t.coordinator_id, t.producer_id, t.state] for t in listed])


async def transactions_describe(admin: Admin, args: argparse.Namespace) -> None:
    described = (await admin.describe_transactions([args.transactional_id]))[args.transactional_id]
    now_ms = int(time.time() * 1000)
    start = described.transaction_start_time_ms
    emit(args, described, ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                           "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                           "TopicPartitions"],
         [[described.coordinator_id, described.transactional_id, described.producer_id, described.producer_epoch,
           described.state, described.transaction_timeout_ms, start if start >= 0 else None,
           now_ms - start if start >= 0 else None, described.topic_partitions]])


async def transactions_describe_producers(admin: Admin, args: argparse.Namespace) -> None:
    tp = TopicPartition(args.topic, args.partition)
    producers = (await admin.describe_producers([tp]))[tp]
    emit(args, producers, ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                           "LastTimestamp", "CurrentTransactionStartOffset"],
         [[p.producer_id, p.producer_epoch, p.coordinator_epoch if p.coordinator_epoch >= 0 else None,
           p.last_sequence, p.last_timestamp, p.current_transaction_start_offset if p.in_transaction else None]
          for p in producers])


async def transactions_find_hanging(admin: Admin, args: argparse.Namespace) -> None:
    hanging = await admin.find_hanging_transactions(topic=args.topic, partition=args.partition,
                                                    broker_id=args.broker_id,
                                                    max_transaction_timeout_ms=args.max_transaction_timeout * 60000)
    now_ms = int(time.time() * 1000)
    emit(args, hanging, ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                         "LastTimestamp", "Duration(min)"],
         [[h.topic_partition.topic, h.topic_partition.partition, h.producer.producer_id, h.producer.producer_epoch,
           h.producer.coordinator_epoch, h.producer.current_transaction_start_offset, h.producer.last_timestamp,
           (now_ms - h.producer.last_timestamp) // 60000] for h in hanging])


async def transactions_abort(admin: Admin, args: argparse.Namespace) -> None:
    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is not None:
        spec = await admin.abort_spec_for(tp, args.start_offset)
    else:
        spec = AbortTransactionSpec(tp, args.producer_id, args.producer_epoch, args.coordinator_epoch)
    await admin.abort_transaction(spec)
    emit(args, {"aborted": spec}, ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "Result"],
         [[tp.topic, tp.partition, spec.producer_id, spec.producer_epoch, spec.coordinator_epoch, "aborted"]])


# ---------------------------------------------------------------------- cluster

async def cluster_describe(admin: Admin, args: argparse.Namespace) -> None:
    described = await admin.describe_cluster()
    emit(args, described, ["ClusterId", "BrokerId", "Host", "Port", "Controller"],
         [[described.cluster_id, b.node_id, b.host, b.port, b.node_id == described.controller_id]
          for b in described.brokers])


# ---------------------------------------------------------------------- parser

class UsageError(Exception):
    """A command line the tool cannot act on (exit code 2)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="weir-admin", description="Administer a Kafka cluster (Weir or Apache "
                                     "Kafka): topics, consumer groups and transactions.")
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092", help="host:port[,host:port...]")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--timeout-ms", type=int, default=60000, help="time limit of each call, retries included")
    parser.add_argument("--command-config", metavar="FILE",
                        help="client properties as Kafka's tools take them (security.protocol, sasl.mechanism, "
                             "sasl.jaas.config, ssl.truststore.location, ...)")
    nouns = parser.add_subparsers(dest="noun", required=True)

    topics = nouns.add_parser("topics", help="list, describe, create, delete and configure topics")
    verbs = topics.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("list")
    p.add_argument("--include-internal", action="store_true")
    p.set_defaults(run=topics_list)
    p = verbs.add_parser("describe", help="partitions and non-default configs (every topic if none named)")
    p.add_argument("topics", nargs="*")
    p.set_defaults(run=topics_describe)
    p = verbs.add_parser("create")
    p.add_argument("topic")
    p.add_argument("--partitions", type=int, default=-1, help="default: the broker's num.partitions")
    p.add_argument("--replication-factor", type=int, default=-1)
    p.add_argument("--config", type=_key_value, action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--validate-only", action="store_true")
    p.set_defaults(run=topics_create)
    p = verbs.add_parser("delete")
    p.add_argument("topics", nargs="+")
    p.set_defaults(run=topics_delete)
    p = verbs.add_parser("add-partitions", help="raise a topic's partition count")
    p.add_argument("topic")
    p.add_argument("--total", type=int, required=True, help="the new partition count")
    p.add_argument("--validate-only", action="store_true")
    p.set_defaults(run=topics_add_partitions)
    p = verbs.add_parser("alter-config", help="change topic configs (IncrementalAlterConfigs)")
    p.add_argument("topic")
    p.add_argument("--set", type=_key_value, action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--delete", action="append", default=[], metavar="NAME", help="back to the default")
    p.add_argument("--append", type=_key_value, action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--subtract", type=_key_value, action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--validate-only", action="store_true")
    p.set_defaults(run=topics_alter_config)

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
    p.add_argument("group")
    scope = p.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]")
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has offsets for")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-offset", type=int)
    p.add_argument("--execute", action="store_true", help="apply the plan (otherwise only show it)")
    p.set_defaults(run=groups_reset_offsets)

    txns = nouns.add_parser("transactions", help="inspect transactions; find and abort hanging ones")
    verbs = txns.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("list")
    p.add_argument("--state", action="append", default=[], help="e.g. Ongoing (repeatable)")
    p.add_argument("--producer-id", type=int, action="append", default=[])
    p.add_argument("--duration-filter", type=int, default=-1, metavar="MS",
                   help="only transactions open at least this long")
    p.set_defaults(run=transactions_list)
    p = verbs.add_parser("describe")
    p.add_argument("--transactional-id", required=True)
    p.set_defaults(run=transactions_describe)
    p = verbs.add_parser("describe-producers")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, required=True)
    p.set_defaults(run=transactions_describe_producers)
    p = verbs.add_parser("find-hanging")
    p.add_argument("--topic")
    p.add_argument("--partition", type=int)
    p.add_argument("--broker-id", type=int)
    p.add_argument("--max-transaction-timeout", type=int, default=15, metavar="MINUTES",
                   help="only transactions open longer than this (default 15, Kafka's transaction.max.timeout.ms)")
    p.set_defaults(run=transactions_find_hanging)
    p = verbs.add_parser("abort", help="abort a hanging transaction (an ABORT marker on the partition)")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, required=True)
    p.add_argument("--start-offset", type=int, help="start offset of the transaction (as find-hanging shows it)")
    p.add_argument("--producer-id", type=int)
    p.add_argument("--producer-epoch", type=int)
    p.add_argument("--coordinator-epoch", type=int)
    p.set_defaults(run=transactions_abort)

    cluster = nouns.add_parser("cluster", help="cluster id, brokers and controller")
    verbs = cluster.add_subparsers(dest="verb", required=True)
    verbs.add_parser("describe").set_defaults(run=cluster_describe)
    cli_acls.add_parser(nouns, lambda command: lambda admin, args: command(admin, args, emit))
    cli_users.add_parser(nouns, lambda command: lambda admin, args: command(admin, args, emit))
    cli_faults.add_parser(nouns)
    return parser


def check_usage(args: argparse.Namespace) -> None:
    """Refuse, before connecting, a command line the tool cannot act on."""
    verb = getattr(args, "verb", None)
    if args.noun == "transactions" and verb == "find-hanging":
        if args.topic is None and args.broker_id is None:
            raise UsageError("find-hanging needs --topic or --broker-id to limit the search")
        if args.partition is not None and args.topic is None:
            raise UsageError("--partition needs --topic")
    if args.noun == "transactions" and verb == "abort" and args.start_offset is None and None in (
            args.producer_id, args.producer_epoch, args.coordinator_epoch):
        raise UsageError("identify the transaction with --start-offset, or with --producer-id, --producer-epoch "
                         "and --coordinator-epoch")
    if args.noun == "topics" and verb == "alter-config" and not (args.set or args.delete or args.append
                                                                  or args.subtract):
        raise UsageError("alter-config needs at least one --set, --delete, --append or --subtract")


def command_config(path: str | None) -> dict[str, Any]:
    """The security keywords of a Java client properties file (``--command-config``)."""
    if path is None:
        return {}
    settings: dict[str, str] = {}
    pending = ""
    with open(path, encoding="utf-8") as file:
        for raw in file:
            line = pending + raw.strip()
            if line.endswith("\\"):  # a value continued on the next line (JAAS configs often are)
                pending = line[:-1] + " "
                continue
            pending = ""
            if line and not line.startswith(("#", "!")):
                name, _sep, value = line.partition("=")
                settings[name.strip()] = value.strip()
    return security_keywords(settings)


async def run(args: argparse.Namespace) -> None:
    async with Admin(args.bootstrap_server, default_api_timeout_ms=args.timeout_ms,
                     request_timeout_ms=min(args.timeout_ms, 30000), **command_config(args.command_config)) as admin:
        command: Command = args.run
        await command(admin, args)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.noun == cli_faults.NOUN:  # its own channel, no Kafka connection
        return cli_faults.run(args)
    try:
        check_usage(args)
        asyncio.run(run(args))
    except UsageError as exc:
        parser.error(str(exc))  # exits 2
    except (KafkaException, ValueError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
