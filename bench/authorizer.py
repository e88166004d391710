"""What the ACL authorizer costs on produce and fetch throughput, and per decision.

    python -m bench.authorizer [--messages 100000] [--size 1024] [--rounds 3] [--acls 1000]

Weir on PLAINTEXT without ``authorizer.class.name`` and with Kafka's StandardAuthorizer (one
broker at a time, a fresh one per round); the latter holds ``--acls`` unrelated ACLs plus the ones that let the
(anonymous) load generator write and read ``bench*`` topics through PREFIXED patterns, so every
Produce and Fetch goes through an ACL lookup (``allow.everyone.if.no.acl.found`` only lets it
create topics and ACLs). confluent-kafka produces and fetches the same load on each, the order
alternating between rounds; medians in MB/s and the ratio are printed, with the broker's own CPU
time of each phase (what a busy machine disturbs least), then the in-process cost of one decision.
The brokers' data goes when the run ends.

The "fixed ~80 ms per fetch run" with the authorizer on (issue 23: 373 against 538 MB/s at 100k
records, 639 against 605 at 400k, three rounds each) is not a cost of the authorizer. Looked for
on the wire (librdkafka ``debug=broker,protocol,fetch,cgrp,topic``, four runs of each
configuration), the consumer's requests are the same with and without it, each answered without
an error: ApiVersions, Metadata (v12), FindCoordinator (v2) for group ``bench``, then back-to-back
Fetch v12 requests of ~10 MB answers with no backoff, retry or refused request; the first Fetch
leaves 4-9 ms after the consumer is made in both. The broker spends the same CPU on the fetch
phase (30-60 ms either way for 100 MB), and one decision is ~10 us per Fetch request. A fetch
run's length follows the ~10 MB answers' transfer times (13-28 ms each on the 2-core machine,
more under load), which vary between runs by more than 80 ms out of ~200-400 ms: at 100k x 1 KiB
one run is too short for a median of three to show a ratio (the 400k figures, with the authorizer
ahead, say the same). On the shared machine at load 3.5-5, six runs gave fetch ratios of 0.72-1.28
(0.90 with 8 rounds) with the broker's fetch CPU equal within its 10 ms tick: a residual
difference of ~10% in wall-clock medians, if there is one, is below what these runs can tell
apart. Compare the CPU lines, or more rounds and records, before reading a ratio.

What did distort the figures, with or without the authorizer: librdkafka's fetch.queue.backoff.ms.
When the consumer's local queue reaches queued.max.messages.kbytes (64 MB) the partition is not
fetched again for 1 s (debug: "Fetch backoff for 1000ms: Local: Queue full", rdkafka_fetcher.c
rd_kafka_toppar_fetch_decide; nothing ends the backoff early when the application drains the
queue). A Python consumer 64 MB behind the fetcher (400k records, or 100k on a busy machine) then
measures that timer: 100-140 MB/s at 400k and 55-57 MB/s in 100k rounds on the busy machine.
The consumer here re-checks every 10 ms instead (CONSUMER), which keeps the queue's bound.
It is the client's behaviour, which any broker that outruns the consumer triggers: a consumer
reading every value (400k x 1 KiB, load ~4) got 167 and 218 MB/s from Apache Kafka 4.3.1 with
the 1 s backoff, 263 and 326 with 10 ms; from Weir 121 and 123, then 266 and 394. bench.throughput's
fetch (and issue 23's value-reading consumer, 1 GB runs) keeps librdkafka's default.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType,
                                   ResourceType)

from bench.throughput import cpu_seconds, create_topic, fetch, free_port, produce, wait_until_serving

REPO = Path(__file__).resolve().parent.parent
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# librdkafka stops fetching a partition for fetch.queue.backoff.ms (1 s) whenever its local queue
# holds queued.max.messages.kbytes (64 MB): a consumer that falls behind by 64 MB (a busy machine,
# any run of more than 64 MB) then measures that timer, not the broker. 10 ms keeps the bounded
# queue and takes the timer out of the figures.
CONSUMER = {"fetch.queue.backoff.ms": 10}


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


def _measure(work: Path, name: str, settings: dict[str, str], args: argparse.Namespace,
             into: tuple[list[float], ...]) -> None:
    """One broker's round: produce then fetch, rates and the broker's CPU time of each phase."""
    process, bootstrap = _start(work, name, settings)
    try:
        if settings:
            _grant(bootstrap, args.acls)
        create_topic(bootstrap, "bench-load", 1)
        began = cpu_seconds(process.pid)
        into[0].append(produce(bootstrap, "bench-load", args.messages, args.size))
        produced = cpu_seconds(process.pid)
        into[1].append(fetch(bootstrap, "bench-load", 1, args.messages, args.size, client=CONSUMER))
        into[2].append((produced - began) * 1000)
        into[3].append((cpu_seconds(process.pid) - produced) * 1000)
    finally:
        process.terminate()
        process.wait(30)


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
    # name -> (produce MB/s, fetch MB/s, broker CPU ms of the produce, of the fetch), one entry per round
    results: dict[str, tuple[list[float], ...]] = {name: ([], [], [], []) for name in settings}
    try:
        for round_number in range(args.rounds):
            # One broker at a time, a fresh one per round, the order alternating: two brokers side by
            # side measured each other (the one started second fetched faster whichever it was).
            for name in (["off", "on"] if round_number % 2 == 0 else ["on", "off"]):
                _measure(work, f"{name}-{round_number}", settings[name], args, results[name])
    finally:
        shutil.rmtree(work, ignore_errors=True)  # 2 x rounds x (messages x size) of segments
    base_produce, base_fetch = (statistics.median(v) for v in results["off"][:2])
    print(f"{args.messages} x {args.size} B, median of {args.rounds} round(s), MB/s (ratio to no authorizer); "
          f"{args.acls} unrelated ACLs; load average {os.getloadavg()[0]:.2f} at the end")
    for name in settings:
        produced, fetched, produce_cpu, fetch_cpu = results[name]
        p, f = statistics.median(produced), statistics.median(fetched)
        print(f"  authorizer {name:3s}  produce {p:7.1f} ({p / base_produce:4.2f})   "
              f"fetch {f:7.1f} ({f / base_fetch:4.2f})   rounds: "
              + " ".join(f"{a:.0f}/{b:.0f}" for a, b in zip(produced, fetched, strict=True)))
        print(f"                  broker CPU ms: produce {statistics.median(produce_cpu):5.0f}   "
              f"fetch {statistics.median(fetch_cpu):5.0f}   rounds: "
              + " ".join(f"{a:.0f}/{b:.0f}" for a, b in zip(produce_cpu, fetch_cpu, strict=True)))
    off, on = _decision_cost(args.acls)
    print(f"one decision: {off:.2f} us with authorization off, {on:.2f} us on (PREFIXED allow, {args.acls} ACLs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
