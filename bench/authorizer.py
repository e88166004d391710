"""What the ACL authorizer costs on produce and fetch throughput, and per decision.

    python -m bench.authorizer [--messages 100000] [--size 1024] [--rounds 3] [--acls 1000]

Weir on PLAINTEXT without ``authorizer.class.name`` and with Kafka's StandardAuthorizer (one
broker at a time, a fresh one per round); the latter holds ``--acls`` unrelated ACLs plus the ones that let the
(anonymous) load generator write and read ``bench*`` topics through PREFIXED patterns, so every
Produce and Fetch goes through an ACL lookup (``allow.everyone.if.no.acl.found`` only lets it
create topics and ACLs). confluent-kafka produces and fetches the same load on each, the order
alternating between rounds; medians in MB/s and the ratio are printed, then the in-process cost of one decision.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType,
                                   ResourceType)

from bench.throughput import create_topic, fetch, free_port, produce, wait_until_serving

REPO = Path(__file__).resolve().parent.parent
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def _start(work: Path, name: str, settings: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    properties = work / f"{name}.properties"
    properties.write_text(f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
                          + "".join(f"{k}={v}\n" for k, v in settings.items()))
    process = subprocess.Popen([sys.executable, "-m", "weir.broker", "--config", str(properties),
                                "--data-dir", str(work / name), "--log-level", "WARNING"], cwd=REPO)
    bootstrap = f"127.0.0.1:{port}"
    wait_until_serving(bootstrap, time.monotonic() + 30)
    return process, bootstrap


def _grant(bootstrap: str, unrelated: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    bindings = [AclBinding(ResourceType.TOPIC, "bench", ResourcePatternType.PREFIXED, "User:ANONYMOUS", "*",
                           op, AclPermissionType.ALLOW) for op in (AclOperation.WRITE, AclOperation.READ)]
    bindings.append(AclBinding(ResourceType.GROUP, "bench", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                               AclOperation.READ, AclPermissionType.ALLOW))
    bindings += [AclBinding(ResourceType.TOPIC, f"other-{i}", ResourcePatternType.LITERAL if i % 2
                            else ResourcePatternType.PREFIXED, f"User:u{i}", "*", AclOperation.READ,
                            AclPermissionType.ALLOW) for i in range(unrelated)]
    for future in admin.create_acls(bindings).values():
        future.result(30)


def _decision_cost(unrelated: int) -> tuple[float, float]:
    """Microseconds per ``allows`` call: authorization off, and on with the same ACLs."""
    from weir.broker.acl.authorizer import Authorizer
    from weir.broker.acl.model import ALLOW, PREFIXED, READ, TOPIC, WRITE, AclBinding as Binding
    from weir.broker.acl.store import AclStore
    from weir.broker.config import BrokerConfig
    from weir.broker.security.session import Session
    with tempfile.TemporaryDirectory() as data:
        store = AclStore(Path(data))
        store.create([Binding(TOPIC, "bench", PREFIXED, "User:ANONYMOUS", "*", WRITE, ALLOW)]
                     + [Binding(TOPIC, f"other-{i}", 3 if i % 2 else PREFIXED, f"User:u{i}", "*", READ, ALLOW)
                        for i in range(unrelated)])
        session = Session(None, "/127.0.0.1", "User:ANONYMOUS", True)
        off = Authorizer(BrokerConfig({}), store)
        on = Authorizer(BrokerConfig({"authorizer.class.name": AUTHORIZER}), store)
        calls = 100_000
        per_call = [min(timeit.repeat(lambda a=a: a.allows(session, WRITE, TOPIC, "bench-orders-0"),
                                      number=calls, repeat=3)) / calls * 1e6 for a in (off, on)]
    return per_call[0], per_call[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--acls", type=int, default=1000, help="unrelated ACLs the authorizer holds")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="weir-bench-authorizer-"))
    settings = {"off": {}, "on": {"authorizer.class.name": AUTHORIZER, "allow.everyone.if.no.acl.found": "true"}}
    results: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in settings}
    for round_number in range(args.rounds):
        # One broker at a time, a fresh one per round, the order alternating: two brokers side by
        # side measured each other (the one started second fetched faster whichever it was).
        for name in (["off", "on"] if round_number % 2 == 0 else ["on", "off"]):
            process, bootstrap = _start(work, f"{name}-{round_number}", settings[name])
            try:
                if name == "on":
                    _grant(bootstrap, args.acls)
                create_topic(bootstrap, "bench-load", 1)
                results[name][0].append(produce(bootstrap, "bench-load", args.messages, args.size))
                results[name][1].append(fetch(bootstrap, "bench-load", 1, args.messages, args.size))
            finally:
                process.terminate()
                process.wait(30)
    base_produce, base_fetch = (statistics.median(v) for v in results["off"])
    print(f"{args.messages} x {args.size} B, median of {args.rounds} round(s), MB/s (ratio to no authorizer); "
          f"{args.acls} unrelated ACLs")
    for name in settings:
        p, f = (statistics.median(v) for v in results[name])
        print(f"  authorizer {name:3s}  produce {p:7.1f} ({p / base_produce:4.2f})   "
              f"fetch {f:7.1f} ({f / base_fetch:4.2f})   rounds: "
              + " ".join(f"{a:.0f}/{b:.0f}" for a, b in zip(*results[name], strict=True)))
    off, on = _decision_cost(args.acls)
    print(f"one decision: {off:.2f} us with authorization off, {on:.2f} us on (PREFIXED allow, {args.acls} ACLs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
