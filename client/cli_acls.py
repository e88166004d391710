"""``weir-admin acls list | add | remove``: Kafka's ACLs, named as ``kafka-acls`` names them.

    weir-admin acls add --allow-principal User:alice --operation read --topic orders
    weir-admin acls add --deny-principal User:bob --operation all --topic pay- --resource-pattern-type prefixed
    weir-admin acls list [--topic orders] [--principal User:alice]
    weir-admin acls remove --topic orders --principal User:alice

One resource (``--topic``, ``--group``, ``--transactional-id`` or ``--cluster``) per call. ``list``
and ``remove`` take filters: no resource means every one, ``--resource-pattern-type`` is
``any`` unless given (``match`` finds the ACLs that apply to a name), and ``--principal``,
``--host`` and ``--operation`` narrow them.
"""

from __future__ import annotations

import argparse

from .admin import Admin
from .admin.acls import OPERATIONS, PATTERN_TYPES, AclBinding
from .cli_output import emit


def _resource(args: argparse.Namespace, *, for_filter: bool) -> tuple[str, str | None]:
    if args.topic is not None:
        return "topic", args.topic
    if args.group is not None:
        return "group", args.group
    if args.transactional_id is not None:
        return "transactional-id", args.transactional_id
    if args.cluster:
        return "cluster", "kafka-cluster"
    if for_filter:
        return "any", None
    raise ValueError("name a resource: --topic, --group, --transactional-id or --cluster")


def _filter(args: argparse.Namespace) -> AclBinding:
    resource_type, name = _resource(args, for_filter=True)
    return AclBinding(resource_type, name, args.resource_pattern_type or "any", args.principal, args.host,
                      args.operation or "any", "any")


def _rows(bindings: list[AclBinding]) -> list[list[str | None]]:
    return [[b.resource_type, b.resource_name, b.pattern_type, b.principal, b.host, b.operation, b.permission]
            for b in sorted(bindings, key=lambda b: (b.resource_type, b.resource_name or "", b.principal or ""))]


HEADERS = ["ResourceType", "Name", "PatternType", "Principal", "Host", "Operation", "Permission"]


async def acls_list(admin: Admin, args: argparse.Namespace) -> None:
    found = await admin.describe_acls(_filter(args))
    emit(args, [vars(b) for b in found], HEADERS, _rows(found))


async def acls_add(admin: Admin, args: argparse.Namespace) -> None:
    resource_type, name = _resource(args, for_filter=False)
    pattern = args.resource_pattern_type or "literal"
    if pattern not in ("literal", "prefixed"):
        raise ValueError("an ACL's pattern type is literal or prefixed")
    if not args.allow_principal and not args.deny_principal:
        raise ValueError("name --allow-principal or --deny-principal")
    bindings = [AclBinding(resource_type, name, pattern, principal, args.host or "*", operation, permission)
                for permission, principals in (("allow", args.allow_principal), ("deny", args.deny_principal))
                for principal in principals for operation in (args.operation_list or ["all"])]
    await admin.create_acls(bindings)
    emit(args, [vars(b) for b in bindings], HEADERS, _rows(bindings))


async def acls_remove(admin: Admin, args: argparse.Namespace) -> None:
    removed = await admin.delete_acls([_filter(args)])
    emit(args, [vars(b) for b in removed], HEADERS, _rows(removed))


def _resource_options(parser: argparse.ArgumentParser, patterns: list[str]) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--topic")
    which.add_argument("--group")
    which.add_argument("--transactional-id")
    which.add_argument("--cluster", action="store_true")
    parser.add_argument("--resource-pattern-type", choices=patterns)
    parser.add_argument("--host", help="client address (default: any, *)")


def add_parser(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``acls`` noun."""
    acls = nouns.add_parser("acls", help="list, add and remove ACLs (the broker's authorizer)")
    verbs = acls.add_subparsers(dest="verb", required=True)
    operations = [name for name in OPERATIONS if name != "any"]
    p = verbs.add_parser("list")
    _resource_options(p, list(PATTERN_TYPES))
    p.add_argument("--principal")
    p.add_argument("--operation", choices=list(OPERATIONS))
    p.set_defaults(run=acls_list)
    p = verbs.add_parser("add")
    _resource_options(p, ["literal", "prefixed"])
    p.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL")
    p.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL")
    p.add_argument("--operation", dest="operation_list", action="append", choices=operations,
                   help="repeatable; default: all")
    p.set_defaults(run=acls_add)
    p = verbs.add_parser("remove", help="remove every ACL the filter matches")
    _resource_options(p, list(PATTERN_TYPES))
    p.add_argument("--principal")
    p.add_argument("--operation", choices=list(OPERATIONS))
    p.set_defaults(run=acls_remove)
