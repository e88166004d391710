"""``weir-admin topics list | describe | create | delete | add-partitions | alter-config``, as ``kafka-topics``
and ``kafka-configs --entity-type topics`` do them."""

from __future__ import annotations

import argparse
from typing import TypedDict

from .admin import Admin, AlterConfigOp, ConfigResource, NewTopic, OpType
from .admin.results import TopicDescription
from .cli_output import UsageError, emit


def _key_value(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    return name, value


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


def _check_alter_config(args: argparse.Namespace) -> None:
    if not (args.set or args.delete or args.append or args.subtract):
        raise UsageError("alter-config needs at least one --set, --delete, --append or --subtract")


def add_parser(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``topics`` noun."""
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
    p.set_defaults(run=topics_alter_config, check=_check_alter_config)
