"""How late a 1 ms timer on the event loop fires while the log cleaner compacts.

Fills compacted partitions in-process through the real append path (batches of
``--batch`` records over ``--keys`` distinct keys, so most records are
overwritten; a share of tombstones), rolls them into sealed segments, then runs
the broker's ``LogCleaner`` over them, as its background loop would, with a
ticker on the same loop: each tick sleeps 1 ms and records how late it woke.
The same ticker on the idle loop gives the machine's own noise.

    python -m bench.cleaner_stall [--records 400000] [--partitions 2] [--compression none|lz4|zstd]
                                  [--runner process|thread ...] [--idle-seconds 10]

``--runner thread`` runs the same pass in a worker thread of the broker process
(as the cleaner did before ``cleaner_process``, minus the GIL hand-off every
millisecond it made then), for comparison; several runners are measured one
after the other, each on freshly written partitions.

The broker process runs its cleaner on its own event loop exactly so; in-process
the ticker sees the loop the cleaner shares, without a network client's noise.

Measured on the project's 2-core VM under load 9-14 (other engineers' tests), 2
partitions x 400,000 records (93 MB, 5% kept), two interleaved rounds, ms of lag
(p50 / p99 / p99.9 / max), each next to the idle loop measured just before it;
"before" is the cleaner as it was (a worker thread handing the GIL over every ms):

    before, a thread:   0.51 / 11.8 / 31.1 / 111   idle 0.18 / 28.2 / 134 / 222
                        0.67 / 21.3 / 76.8 / 215   idle 0.15 / 7.6 / 43.6 / 140
    a child process:    0.16 / 5.9 / 23.1 / 91     idle 0.16 / 5.6 / 15.6 / 50
                        0.17 / 6.1 / 19.2 / 59     idle 0.16 / 5.3 / 17.6 / 141

The loop ticked 670 times a second while the child compacted, 290-390 with the
thread. In a child process the loop's lag is the idle loop's: what remains is the
machine's scheduling, which on this VM misses 10 ms at p99.9 with no cleaner at all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path

from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.log import cleaner_process
from weir.broker.log.cleaner import LogCleaner
from weir.broker.log.partition import Partition
from weir.protocol import records as rec
from weir.protocol.compression import Compression


async def loop_ticker(stop: asyncio.Event, lags: list[float]) -> None:
    """Until ``stop``: sleep 1 ms on the loop, note how late it woke."""
    while not stop.is_set():
        began = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter() - began - 0.001)


def percentiles(lags: list[float]) -> dict[str, float]:
    ordered = sorted(lags) or [0.0]

    def pick(q: float) -> float:
        return round(ordered[min(int(len(ordered) * q), len(ordered) - 1)] * 1000, 2)

    return {"p50_ms": pick(0.5), "p99_ms": pick(0.99), "p999_ms": pick(0.999),
            "max_ms": round(ordered[-1] * 1000, 2), "ticks": len(lags)}


async def fill(directory: Path, name: str, records: int, batch: int, keys: int, compression: Compression,
               segment_bytes: int) -> Partition:
    config = BrokerConfig().topic_defaults()
    config.update({"cleanup.policy": "compact", "segment.bytes": segment_bytes})
    partition = Partition(name, 0, directory / f"{name}-0", config)
    partition.open()
    value = b"v" * 100
    for first in range(0, records, batch):
        batch_records = [rec.Record(None if i % 50 == 0 else value, key=b"key-%d" % (i % keys), timestamp=1000)
                         for i in range(first, min(first + batch, records))]
        encoded = memoryview(rec.encode_batch(batch_records, compression=compression))
        validated = partition.validate_client_batch(encoded, 9, 0)
        await partition.append_client_batch(validated.batch, validated.header, 0)
    partition.roll()  # everything written becomes cleanable
    return partition


RUNNERS = {"process": cleaner_process.in_child_process, "thread": cleaner_process.in_thread}


async def measure(args: argparse.Namespace) -> dict[str, object]:
    stop, idle_lags = asyncio.Event(), []
    ticker = asyncio.get_running_loop().create_task(loop_ticker(stop, idle_lags))
    await asyncio.sleep(args.idle_seconds)
    stop.set()
    await ticker
    results: dict[str, object] = {"idle": percentiles(idle_lags)}
    for runner in args.runner:
        results[runner] = await measure_pass(args, RUNNERS[runner])
    return results


async def measure_pass(args: argparse.Namespace, runner: cleaner_process.PassRunner) -> dict[str, object]:
    root = Path(tempfile.mkdtemp(prefix="weir-cleaner-stall-"))
    compression = Compression[args.compression.upper()]
    partitions = [await fill(root, f"t{i}", args.records, args.batch, args.keys, compression, args.segment_bytes)
                  for i in range(args.partitions)]
    cleaner = LogCleaner(root, BrokerConfig(), ManualClock(10**13), lambda: partitions, runner)
    stop, lags = asyncio.Event(), []
    ticker = asyncio.get_running_loop().create_task(loop_ticker(stop, lags))
    began = time.perf_counter()
    read = written = kept = total = 0
    while (target := cleaner.filthiest(cleaner.clock.now_ms())) is not None:
        result = await cleaner.clean(target)
        if result is None:
            break
        read += result.stats.bytes_read
        written += result.stats.bytes_written
        kept += result.stats.records_written
        total += result.stats.records_read
    elapsed = time.perf_counter() - began
    stop.set()
    await ticker
    for partition in partitions:
        partition.close()
    await cleaner.stop()
    shutil.rmtree(root)
    return {"compression": args.compression, "partitions": args.partitions, "records_read": total,
            "records_kept": kept, "mb_read": round(read / 1e6, 1), "mb_written": round(written / 1e6, 1),
            "seconds": round(elapsed, 2), "mb_per_s": round(read / 1e6 / max(elapsed, 1e-9), 1),
            "compacting": percentiles(lags)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=400_000, help="records per partition")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--batch", type=int, default=100, help="records per batch")
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    parser.add_argument("--segment-bytes", type=int, default=8 * 1024 * 1024)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--runner", nargs="+", default=["process"], choices=sorted(RUNNERS))
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args)), indent=2))


if __name__ == "__main__":
    main()
