"""Micro benchmark of the log's hot path: append one small batch, then fetch from it.

Measures the per-operation cost of ``Partition.append_client_batch`` and
``Partition.read`` on one partition (what every Produce and Fetch does per
partition), without sockets, so a change to segment file handling shows up
undiluted. Prints the median of several rounds in microseconds per operation.

    python -m bench.log_hot_path [--ops 20000] [--rounds 5] [--size 100]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from weir.broker.config import BrokerConfig
from weir.broker.log.partition import Partition
from weir.protocol import records as rec


def _open_partition(directory: Path) -> Partition:
    partition = Partition("bench", 0, directory, BrokerConfig().topic_defaults())
    partition.open()
    return partition


async def _round(ops: int, size: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        partition = _open_partition(Path(tmp))
        batch = memoryview(rec.encode_batch([rec.Record(b"v" * size, timestamp=1000)]))
        header = partition.validate_client_batch(batch, 9)
        appending = reading = 0.0
        for offset in range(ops):  # a producer and a consumer tailing the log
            started = time.perf_counter()
            await partition.append_client_batch(batch, header, 0)
            appended = time.perf_counter()
            partition.read(offset, 1 << 20)
            reading += time.perf_counter() - appended
            appending += appended - started
        partition.close()
    return appending / ops * 1e6, reading / ops * 1e6


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=100, help="record value bytes")
    args = parser.parse_args(argv)
    appends, reads = [], []
    for _ in range(args.rounds):
        append_us, read_us = asyncio.run(_round(args.ops, args.size))
        appends.append(append_us)
        reads.append(read_us)
    print(f"append {statistics.median(appends):.2f} us/op, read {statistics.median(reads):.2f} us/op "
          f"(median of {args.rounds} rounds of {args.ops})")


if __name__ == "__main__":
    main()
