"""``weir-admin``: Kafka's admin tools (kafka-topics, kafka-consumer-groups, kafka-transactions) without a JVM.

    weir-admin [--bootstrap-server HOST:PORT] [--json] GROUP COMMAND ...

    topics        list | describe | create | delete | alter-config | add-partitions
    groups        list | describe [--members [--verbose]] | delete | reset-offsets
    share-groups  list | describe [--members | --state] [--verbose] | reset-offsets | delete-offsets | delete
    transactions  list | describe | describe-producers | find-hanging | abort
    cluster       describe
    acls          list | add | remove
    users         list | add | remove
    mirror        check | carry-offsets   (MirrorMaker 2's group offsets on a --target cluster)
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
from typing import Any

from . import (cli_acls, cli_cluster, cli_faults, cli_groups, cli_mirror, cli_share_groups, cli_topics,
               cli_transactions, cli_users)
from .admin import Admin
from .cli_output import Command, UsageError
from .errors import KafkaException
from .java_config import security_keywords

#: The command families, one module each (``weir-admin <noun> <verb>``). A module's ``add_parser(nouns)``
#: adds its noun; each verb sets ``run`` (a ``Command``) and may set ``check`` (``args -> None``, raising
#: UsageError) to refuse a command line before connecting. A new family is one more entry here.
FAMILIES = (cli_topics, cli_groups, cli_share_groups, cli_transactions, cli_cluster, cli_acls, cli_users,
            cli_mirror, cli_faults)


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
    for family in FAMILIES:
        family.add_parser(nouns)
    return parser


def check_usage(args: argparse.Namespace) -> None:
    """Refuse, before connecting, a command line the tool cannot act on (the verb's own ``check``)."""
    check = getattr(args, "check", None)
    if check is not None:
        check(args)


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
    if args.noun == cli_faults.NOUN:  # its own channel (a broker started for tests), no Kafka connection
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
