"""``weir-admin cluster describe``: the cluster id, its brokers and controller."""

from __future__ import annotations

import argparse

from .admin import Admin
from .cli_output import emit


async def cluster_describe(admin: Admin, args: argparse.Namespace) -> None:
    described = await admin.describe_cluster()
    emit(args, described, ["ClusterId", "BrokerId", "Host", "Port", "Controller"],
         [[described.cluster_id, b.node_id, b.host, b.port, b.node_id == described.controller_id]
          for b in described.brokers])


def add_parser(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``cluster`` noun."""
    cluster = nouns.add_parser("cluster", help="cluster id, brokers and controller")
    verbs = cluster.add_subparsers(dest="verb", required=True)
    verbs.add_parser("describe").set_defaults(run=cluster_describe)
