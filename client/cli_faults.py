"""``weir-admin faults ...``: a broker's fault injection, over its control channel.

    export WEIR_FAULTS_URL=http://127.0.0.1:9999 WEIR_FAULTS_TOKEN=...   (or --url / --token)
    weir-admin faults error Produce NOT_LEADER_OR_FOLLOWER [--times 3] [--topic orders [--partition 0]]
    weir-admin faults delay Produce 1.5 [--times 1]
    weir-admin faults disconnect Fetch [--times 1]
    weir-admin faults status | clear | pause | resume | disk-full | disk-ok

The broker must have been started for it (``weir.faults.enable=true`` and
``weir.faults.listener=host:port``; see broker/faults_listener.py). Unlike the other commands
this one opens no Kafka connection (a paused broker answers none): ``--bootstrap-server`` and
``--command-config`` do not apply. The token is best given in the environment, out of ``ps``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .cli_output import print_json, print_table
from .fault_control import FaultControl, FaultRefused

NOUN = "faults"
_SWITCHES = {"clear": FaultControl.clear, "pause": FaultControl.pause, "resume": FaultControl.resume,
             "disk-full": FaultControl.disk_full, "disk-ok": FaultControl.disk_ok}


def add_parser(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    faults = nouns.add_parser(NOUN, help="inject faults into a broker started for tests (its control channel)")
    faults.add_argument("--url", default=os.environ.get("WEIR_FAULTS_URL"),
                        help="http://host:port of weir.faults.listener (default: $WEIR_FAULTS_URL)")
    faults.add_argument("--token", default=os.environ.get("WEIR_FAULTS_TOKEN", ""),
                        help="weir.faults.token (default: $WEIR_FAULTS_TOKEN)")
    verbs = faults.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("error", help="answer the next requests of an API with a Kafka error")
    p.add_argument("api", help="Kafka's API name: Produce, Fetch, InitProducerId, JoinGroup, ...")
    p.add_argument("code", help="Kafka's error name, e.g. NOT_LEADER_OR_FOLLOWER")
    p.add_argument("--times", type=int, default=1)
    p.add_argument("--topic")
    p.add_argument("--partition", type=int)
    p = verbs.add_parser("delay", help="hold the answers to the next requests of an API back")
    p.add_argument("api")
    p.add_argument("seconds", type=float)
    p.add_argument("--times", type=int, default=1)
    p = verbs.add_parser("disconnect", help="close the connection instead of answering")
    p.add_argument("api")
    p.add_argument("--times", type=int, default=1)
    verbs.add_parser("status", help="injected answers sent per API, faults still armed, paused, disk full")
    for switch in _SWITCHES:
        verbs.add_parser(switch)


def run(args: argparse.Namespace) -> int:
    """Exit status: 0 done, 1 refused or unreachable, 2 no --url."""
    if not args.url:
        print("Error: faults needs --url or WEIR_FAULTS_URL (http://host:port of weir.faults.listener)",
              file=sys.stderr)
        return 2
    control = FaultControl(args.url, args.token)
    try:
        if args.verb == "error":
            control.error(args.api, args.code, args.times, args.topic, args.partition)
        elif args.verb == "delay":
            control.delay(args.api, args.seconds, args.times)
        elif args.verb == "disconnect":
            control.disconnect(args.api, args.times)
        elif args.verb == "status":
            _print_status(args, control.state())
            return 0
        else:
            _SWITCHES[args.verb](control)
    except (FaultRefused, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print_json({"ok": True})
    return 0


def _print_status(args: argparse.Namespace, state: dict[str, Any]) -> None:
    if args.json:
        print_json(state)
        return
    print(f"paused: {str(state['paused']).lower()}  disk full: {str(state['disk_full']).lower()}")
    print_table(["API", "Injected"], sorted(state["fired"].items()))
    if state["armed"]:
        print_table(["Armed", "API", "Remaining", "Detail"],
                    [[f["kind"], f["api"], f["remaining"],
                      " ".join(f"{k}={v}" for k, v in f.items()
                               if k not in ("kind", "api", "remaining") and v is not None)]
                     for f in state["armed"]])
