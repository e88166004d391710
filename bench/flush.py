"""What an fsync per acknowledged write costs: produce MB/s at ``log.flush.interval.messages=1``
next to the default (no flush policy), on Weir and on Apache Kafka, in interleaved rounds.

    python -m bench.flush [--messages 100000] [--size 1024] [--partitions 1] [--producers 1] [--rounds 3]
                          [--peers weir,kafka]

Load as bench/throughput.py makes it (confluent-kafka, acks=all, ~1 MB batches), from
``--producers`` producers at once, each on its own connection (their fsyncs can share a group
commit: broker/log/group_commit.py). Kafka flushes in the appending request thread, one fsync
per append; Weir answers once the group commit that covers the append is done. The machine is
shared and loaded: compare the ratios within one run, not figures across runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
from pathlib import Path

from bench.peers import KAFKA_WARM_UP, REPO, _KafkaHandle, weir_starter
from bench.throughput import Broker, create_topic, fetch, produce

FLUSH_EACH = {"log.flush.interval.messages": "1"}


def kafka_starter(overrides: dict[str, str], name: str):
    def start_kafka() -> Broker:
        sys.path.insert(0, str(REPO))
        from reference.kafka import PRODUCTION_JVM_OPTIONS, KafkaProcess
        workdir = Path(tempfile.mkdtemp(prefix="kafka-bench-"))
        kafka = KafkaProcess(workdir, jvm_options=PRODUCTION_JVM_OPTIONS, overrides=overrides)
        kafka.start()
        broker = Broker(name, _KafkaHandle(kafka), kafka.port, kafka.startup_seconds[-1], workdir)
        create_topic(broker.bootstrap, "warm-up", 1)
        produce(broker.bootstrap, "warm-up", KAFKA_WARM_UP // 4, 1024)
        fetch(broker.bootstrap, "warm-up", 1, KAFKA_WARM_UP // 4, 1024)
        return broker
    start_kafka.peer = name
    return start_kafka


def peers(names: list[str]) -> list:
    chosen = []
    for name in names:
        if name == "weir":
            flags = tuple(arg for key, value in FLUSH_EACH.items() for arg in ("--override", f"{key}={value}"))
            chosen += [weir_starter(REPO, "weir"), weir_starter(REPO, "weir-flush1", flags)]
        elif name == "kafka":
            chosen += [kafka_starter({}, "kafka"), kafka_starter(FLUSH_EACH, "kafka-flush1")]
        else:
            raise SystemExit(f"unknown peer {name!r}")
    return chosen


def produce_mbs(broker: Broker, args) -> float:
    create_topic(broker.bootstrap, "bench", args.partitions)
    each = args.messages // args.producers
    rates: list[float] = []
    threads = [threading.Thread(target=lambda: rates.append(produce(broker.bootstrap, "bench", each, args.size)))
               for _ in range(args.producers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if len(rates) != args.producers:
        raise RuntimeError("a producer failed")
    # All start together; the slowest finishes last: total bytes over its time.
    return args.producers * each * args.size / 1e6 / max(each * args.size / 1e6 / rate for rate in rates)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--producers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peers", default="weir,kafka")
    args = parser.parse_args(argv)
    chosen = peers(args.peers.split(","))
    rounds: dict[str, list[float]] = {starter.peer: [] for starter in chosen}
    for number in range(args.rounds):
        for starter in (chosen if number % 2 == 0 else chosen[::-1]):  # alternate who runs first
            broker = starter()
            try:
                rounds[broker.name].append(produce_mbs(broker, args))
            finally:
                broker.stop()
            print(f"round {number + 1} {broker.name}: produce {rounds[broker.name][-1]:.1f} MB/s", flush=True)
    medians = {name: statistics.median(values) for name, values in rounds.items()}
    print(f"\nproduce MB/s, medians of {args.rounds} round(s): {args.messages} x {args.size} B, "
          f"{args.partitions} partition(s), {args.producers} producer(s), acks=all")
    for name, value in medians.items():
        print(f"  {name:<14}{value:>9.1f}   (rounds: {', '.join(f'{v:.1f}' for v in rounds[name])})")
    for base in ("weir", "kafka"):
        if base in medians and base + "-flush1" in medians:
            print(f"  {base}: flush.messages=1 / default = {medians[base + '-flush1'] / medians[base]:.2f}")
    if "weir-flush1" in medians and "kafka-flush1" in medians:
        print(f"  at flush.messages=1: weir / kafka = {medians['weir-flush1'] / medians['kafka-flush1']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
