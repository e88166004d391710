"""The producer's per-record cost without a broker: N ``produce()`` calls into an accumulator
whose sender never sends, for a deterministic count (``valgrind --tool=callgrind``) or a CPU
profile of the append path alone.

    python -m bench.produce_path --records 20000 --size 1024 [--keyed]
    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out python -m bench.produce_path

The producer is never started against a cluster: its metadata holds one topic of three
partitions (leader -1) and its sender task never runs, so batches only pile up (buffer_memory
is raised to hold them all). ``--warmup`` records are produced before the measured ones; the Ir
of the loop alone is the difference between a run of N records and one of 0.

"""

from __future__ import annotations

import argparse
import asyncio
import time

from weir.client.cluster import TopicInfo
from weir.client.producer.producer import Producer

TOPIC = "bench"


async def _run(records: int, size: int, keyed: bool, warmup: int) -> float:
    producer = Producer("127.0.0.1:1", buffer_memory=(records + warmup) * (size + 64) * 2)
    producer.cluster.topics[TOPIC] = TopicInfo(TOPIC, {0: -1, 1: -1, 2: -1})

    async def no_cluster(*_args: object) -> None:
        producer.sender.identity.producer_id, producer.sender.identity.producer_epoch = 1, 0

    # start() as it is, but nothing reaches a cluster and the sender task never runs: nothing leaves
    producer.cluster.refresh = no_cluster  # type: ignore[method-assign]
    producer._init_producer_id = no_cluster  # type: ignore[method-assign]
    producer.sender.start = lambda: None  # type: ignore[method-assign]
    await producer.start()
    payload = b"x" * size
    keys = [str(i).encode() for i in range(1000)]
    for i in range(warmup):
        await producer.produce(TOPIC, payload, keys[i % 1000] if keyed else None)
    started = time.process_time()
    for i in range(records):
        await producer.produce(TOPIC, payload, keys[i % 1000] if keyed else None)
    spent = time.process_time() - started
    held = sum(batch.record_count for batch in producer.accumulator.all_batches())
    assert held == records + warmup, (held, records + warmup)
    producer._closed = True
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--keyed", action="store_true")
    args = parser.parse_args()
    spent = asyncio.run(_run(args.records, args.size, args.keyed, args.warmup))
    print(f"{args.records} records: {spent * 1e6 / max(args.records, 1):.2f} us CPU per record")


if __name__ == "__main__":
    main()
