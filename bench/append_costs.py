"""Event-loop time the restart points (broker/log/restart_points.py) cost the produce path.

Appends ``--megabytes`` of idempotent batches to one partition in-process, at the broker's
default settings, and times on the calling thread (the event loop's) each periodic index
checkpoint, each periodic producer snapshot and each roll, next to the append itself: the
count, the total per 100 MB produced, and the p99 and longest single call. Then it times how
long the restart-point thread (restart_writer.py) still needed to finish what was queued, and
how long the partition takes to open (the same boot: restart points trusted) from a copy of its
files taken right after the last append, as a kill -9 then would leave them.

    python -m bench.append_costs [--megabytes 100] [--record-bytes 1024] [--records-per-batch 1]
                                 [--producers 1] [--rounds 3] [--segment-bytes N]

Reported per round and as the median of the rounds; the machine's load average is printed.

Measured on the shared 2-core VM (load 2.5-5, 1 KiB single-record batches, 100 MB, seven
interleaved pairs of rounds against the code before restart_writer.py): periodic snapshots cost the
loop 3-29 ms per 100 MB (was 23-148, single calls up to 74 ms), index checkpoints 33-104 ms (was
60-92; the thread's syscalls hand the GIL back and forth with a loop that never idles here), the
restart of the files a kill -9 leaves 33-65 ms either way. A broker's loop idles between requests,
when the thread's writes cost it nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from weir.broker.config import BrokerConfig
from weir.broker.log import partition as partition_module
from weir.broker.log import restart_points
from weir.broker.log.partition import Partition
from weir.protocol import records as rec

TIMED = ("checkpoint_indexes", "snapshot_producers_if_due")


def _timed(name: str, real: Callable[..., Any], spent: dict[str, list[float]]) -> Callable[..., Any]:
    """``real`` timed; a snapshot call that took none (most: the check that one is due) is
    counted under ``snapshot check``, apart from those that took one."""
    def timing(partition: Partition, *args: Any) -> Any:
        before = partition.producers.snapshot_offset
        started = time.perf_counter()
        try:
            return real(partition, *args)
        finally:
            took = time.perf_counter() - started
            if name == "snapshot_producers_if_due" and partition.producers.snapshot_offset == before:
                spent["snapshot check"].append(took)
            else:
                spent[name].append(took)
    return timing


async def _round(megabytes: int, record_bytes: int, per_batch: int, producers: int,
                 segment_bytes: int | None) -> dict[str, Any]:
    spent: dict[str, list[float]] = defaultdict(list)
    originals = {name: getattr(restart_points, name) for name in TIMED}
    real_roll = Partition.roll
    for name in TIMED:
        setattr(restart_points, name, _timed(name, originals[name], spent))
    Partition.roll = _timed("roll", real_roll, spent)  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
            config = BrokerConfig().topic_defaults()
            if segment_bytes is not None:
                config["segment.bytes"] = segment_bytes
            partition = Partition("bench", 0, Path(tmp), config)
            partition.open()
            sequences = [0] * producers
            value = b"v" * record_bytes
            batch_bytes = len(rec.encode_batch([rec.Record(value)] * per_batch))
            count = megabytes * 1024 * 1024 // batch_bytes
            began = time.perf_counter()
            for n in range(count):
                producer = n % producers
                batch = memoryview(rec.encode_batch([rec.Record(value, timestamp=1000 + n)] * per_batch,
                                                    producer_id=1000 + producer, producer_epoch=0,
                                                    base_sequence=sequences[producer]))
                sequences[producer] += per_batch
                started = time.perf_counter()
                await partition.append_client_batch(batch, rec.read_header(batch), 0)
                spent["append"].append(time.perf_counter() - started)
            produced = time.perf_counter() - began
            killed = Path(tmp) / "killed"  # the files as a kill -9 right after the last append leaves them
            shutil.copytree(tmp, killed, ignore=shutil.ignore_patterns("killed"))
            drained = time.perf_counter()
            try:  # absent before the restart-point thread existed (a baseline run)
                from weir.broker.log.restart_writer import WRITER
            except ImportError:
                pass
            else:
                await asyncio.get_running_loop().run_in_executor(None, WRITER.wait_idle)
            drain_s = time.perf_counter() - drained
            partition.close(keep_state=False)
            restarted = time.perf_counter()
            reopened = Partition("bench", 0, killed, config)
            reopened.open(verify=False)  # the same boot: restart points trusted
            restart_s = time.perf_counter() - restarted
            assert reopened.log_end_offset == partition.log_end_offset
            reopened.close(keep_state=False)
    finally:
        for name in TIMED:
            setattr(restart_points, name, originals[name])
        Partition.roll = real_roll  # type: ignore[method-assign]
    scale = 100 / megabytes
    result: dict[str, Any] = {"produced_s": produced, "drain_ms": drain_s * 1000, "restart_ms": restart_s * 1000}
    for name, calls in spent.items():
        ordered = sorted(calls)
        result[name] = {"count": len(calls), "ms_per_100mb": sum(calls) * 1000 * scale,
                        "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000,
                        "max_ms": ordered[-1] * 1000}
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--records-per-batch", type=int, default=1)
    parser.add_argument("--producers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--segment-bytes", type=int, default=None, help="default: the broker's (1 GiB)")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}; {args.megabytes} MB of {args.records_per_batch} x "
          f"{args.record_bytes} B batches from {args.producers} producer(s); module {partition_module.__file__}")
    rounds = []
    for n in range(args.rounds):
        result = asyncio.run(_round(args.megabytes, args.record_bytes, args.records_per_batch, args.producers,
                                    args.segment_bytes))
        rounds.append(result)
        parts = [f"{name}: {r['count']} calls, {r['ms_per_100mb']:.1f} ms/100MB, p99 {r['p99_ms']:.3f} ms, "
                 f"max {r['max_ms']:.2f} ms" for name, r in result.items() if isinstance(r, dict)]
        print(f"round {n + 1} (load {os.getloadavg()[0]:.1f}, {result['produced_s']:.1f} s, restart-point "
              f"thread done {result['drain_ms']:.1f} ms after the last append; a restart of the files as they were "
              f"then, in the same boot: {result['restart_ms']:.1f} ms)\n  " + "\n  ".join(parts))
    print(f"median over rounds: restart {statistics.median(r['restart_ms'] for r in rounds):.1f} ms")
    for name in ("append", *TIMED, "snapshot check", "roll"):
        present = [r[name] for r in rounds if name in r]
        if present:
            print(f"  {name}: {statistics.median(p['ms_per_100mb'] for p in present):.1f} ms/100MB, "
                  f"p99 {statistics.median(p['p99_ms'] for p in present):.3f} ms, "
                  f"max {statistics.median(p['max_ms'] for p in present):.2f} ms")


if __name__ == "__main__":
    main()
