"""``weir-admin users list | add | remove``: SCRAM users, as ``kafka-configs --entity-type users``
manages them.

    weir-admin users add alice --mechanism SCRAM-SHA-512 --password secret [--iterations 8192]
    weir-admin users list [alice ...]
    weir-admin users remove alice --mechanism SCRAM-SHA-512
"""

from __future__ import annotations

import argparse

from .admin import Admin
from .admin.users import DEFAULT_ITERATIONS, MECHANISMS
from .cli_output import emit

HEADERS = ["User", "Mechanism", "Iterations"]


async def users_list(admin: Admin, args: argparse.Namespace) -> None:
    found = await admin.describe_user_scram_credentials(args.users or None)
    emit(args, [vars(c) for c in found], HEADERS, [[c.user, c.mechanism, c.iterations] for c in found])


async def users_add(admin: Admin, args: argparse.Namespace) -> None:
    await admin.upsert_user_scram_credential(args.user, args.mechanism, args.password, args.iterations)
    emit(args, {"user": args.user, "mechanism": args.mechanism}, ["User", "Mechanism", "Result"],
         [[args.user, args.mechanism, "added"]])


async def users_remove(admin: Admin, args: argparse.Namespace) -> None:
    await admin.delete_user_scram_credential(args.user, args.mechanism)
    emit(args, {"user": args.user, "mechanism": args.mechanism}, ["User", "Mechanism", "Result"],
         [[args.user, args.mechanism, "removed"]])


def add_parser(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``users`` noun."""
    users = nouns.add_parser("users", help="list, add and remove SCRAM users")
    verbs = users.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("list")
    p.add_argument("users", nargs="*", help="these users only (default: every user)")
    p.set_defaults(run=users_list)
    p = verbs.add_parser("add", help="add or replace a user's credential for one mechanism")
    p.add_argument("user")
    p.add_argument("--mechanism", choices=list(MECHANISMS), default="SCRAM-SHA-512")
    p.add_argument("--password", required=True)
    p.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS)
    p.set_defaults(run=users_add)
    p = verbs.add_parser("remove")
    p.add_argument("user")
    p.add_argument("--mechanism", choices=list(MECHANISMS), required=True)
    p.set_defaults(run=users_remove)
