"""Restart time against history, at the broker's default settings.

Writes a history of exactly-once transactions in-process through the real
coordinators and log store (each: AddPartitions for a data partition and the
group's offsets partition, a data batch, TxnOffsetCommit, EndTxn(commit) with
its markers; every transactional id commits offsets for its own group), plus
plain offset commits of 32 other groups, with the log cleaner running as the
broker runs it. At the end it copies the data directory as a kill -9 leaves it
(no clean shutdown: no final producer snapshots), then closes the broker
cleanly, and times a start-up (log store open + replay of
``__transaction_state`` and ``__consumer_offsets``) of each. Then it compacts
a copy to the end, as the running cleaner would, and times that too.

    python -m bench.restart [--transactions 100000] [--txn-ids 16] [--segment-bytes 104857600]

``--segment-bytes`` is the internal topics' segment.bytes (Kafka's default,
100 MiB); the cleaner rolls their active segment as it outgrows the clean part
(broker/log/cleaner.py). It also reports the cleaner's throughput and how late
a 1 ms timer on the event loop fires while a pass runs (next to an idle loop).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench.cleaner_stall import loop_ticker as _ticker
from weir.broker.clock import ManualClock, SystemClock
from weir.broker.config import BrokerConfig
from weir.broker.context import BrokerContext
from weir.broker.group.offsets import OffsetEntry
from weir.broker.log.cleaner import LogCleaner, is_compacted
from weir.protocol import records as rec

DATA_PARTITIONS = 8
DAY_MS = 86_400_000


def make_context(data_dir: Path, segment_bytes: int) -> BrokerContext:
    config = BrokerConfig({"offsets.topic.segment.bytes": str(segment_bytes),
                           "transaction.state.log.segment.bytes": str(segment_bytes)})
    return BrokerContext(config, data_dir, "127.0.0.1", 9092, SystemClock())


async def settle(context: BrokerContext) -> None:
    while context.txn._completions:
        await asyncio.wait(list(context.txn._completions.values()))


async def write_history(data_dir: Path, transactions: int, txn_ids: int, segment_bytes: int,
                        killed_copy: Path | None = None) -> None:
    context = make_context(data_dir, segment_bytes)
    context.open()
    cleaner = asyncio.get_running_loop().create_task(context.logs.cleaner.run())  # as the broker runs it
    context.logs.create_topic("data", DATA_PARTITIONS)
    producers = {}
    for i in range(txn_ids):
        producers[f"txn-{i}"] = await context.txn.init_producer_id(f"txn-{i}", 60000)
    sequences: dict[tuple[str, int], int] = {}
    began = time.perf_counter()
    for n in range(transactions):
        txn_id = f"txn-{n % txn_ids}"
        pid, epoch = producers[txn_id]
        group = f"eos-{txn_id}"
        offsets_topic, offsets_index = context.txn.offsets_partition(group)
        context.offsets.log.partition(offsets_index)
        data_index = n % DATA_PARTITIONS
        await context.txn.add_partitions(txn_id, pid, epoch, {("data", data_index), (offsets_topic, offsets_index)})
        seq = sequences.get((txn_id, data_index), 0)
        sequences[(txn_id, data_index)] = seq + 1
        batch = memoryview(rec.encode_batch([rec.Record(b"order-%d" % n, key=b"%d" % n)], producer_id=pid,
                                            producer_epoch=epoch, base_sequence=seq, transactional=True))
        partition = context.logs.partition("data", data_index)
        await partition.append_client_batch(batch, rec.read_header(batch), 0,
                                            context.txn.verifier(txn_id, "data", data_index))
        await context.offsets.commit(group, {("orders", data_index): OffsetEntry(n, -1, "", n)},
                                     producer_id=pid, producer_epoch=epoch,
                                     verify_txn=context.txn.verifier(txn_id, offsets_topic, offsets_index))
        await context.txn.end_txn(txn_id, pid, epoch, True)
        await settle(context)
        if n % 4 == 0:  # at-least-once consumers committing alongside
            partition_offset = {("orders", n % DATA_PARTITIONS): OffsetEntry(n, -1, "", n)}
            await context.offsets.commit(f"plain-{(n // 4) % 32}", partition_offset)  # 32 groups
        if n and n % 20000 == 0:
            print(f"  {n} transactions written ({n / (time.perf_counter() - began):.0f}/s)", flush=True)
    if killed_copy is not None:  # the files as a kill -9 now would leave them
        shutil.copytree(data_dir, killed_copy)
    cleaner.cancel()
    await asyncio.gather(cleaner, return_exceptions=True)
    await context.close()


def time_restart(data_dir: Path, segment_bytes: int, runs: int = 3,
                 fresh_copy: bool = False) -> tuple[str, int, int, int]:
    """Median seconds of open + replay (wall, and CPU: on a busy machine the wall time measures
    the neighbours); records replayed; transactional ids; groups.
    ``fresh_copy``: start each run from a copy of ``data_dir`` (a start after kill -9 writes
    producer snapshots and indexes at its close, which the next run would find)."""
    timings, cpu = [], []
    for _ in range(runs):
        if fresh_copy:
            run_dir = data_dir.with_name(data_dir.name + "-run")
            shutil.rmtree(run_dir, ignore_errors=True)
            shutil.copytree(data_dir, run_dir)
        context = make_context(run_dir if fresh_copy else data_dir, segment_bytes)
        began, began_cpu = time.perf_counter(), time.process_time()
        context.open()
        timings.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
        replayed = sum(1 for log in (context.txn.log, context.offsets.log) for _entry in log.replay())
        txns, groups = len(context.txn.txns), len(context.groups.groups)
        asyncio.run(context.logs.close())
    return (f"{statistics.median(timings):.2f} s ({statistics.median(cpu):.2f} s CPU)",
            replayed, txns, groups)


async def compact(data_dir: Path, segment_bytes: int) -> dict:
    """A first pass over every internal partition (timed, with a loop ticker), then passes a
    day apart as the running cleaner would make them, until tombstones and markers are gone."""
    context = make_context(data_dir, segment_bytes)
    context.open()
    clock = ManualClock(int(time.time() * 1000))
    cleaner = LogCleaner(context.data_dir, context.config, clock, context.logs.all_partitions)
    compacted = [p for p in context.logs.all_partitions() if is_compacted(p)]
    stop, lags = asyncio.Event(), []
    ticker = asyncio.get_running_loop().create_task(_ticker(stop, lags))
    read = written = records = 0
    began = time.perf_counter()
    for partition in compacted:
        target = cleaner.log_to_clean(partition, clock.now_ms())
        if target.cleanable:
            result = await cleaner.clean(target)
            if result is not None:
                read += result.stats.bytes_read
                written += result.stats.bytes_written
                records += result.stats.records_read
    elapsed = time.perf_counter() - began
    stop.set()
    await ticker
    for _ in range(2):
        clock.advance(DAY_MS + 1)
        for partition in compacted:
            target = cleaner.log_to_clean(partition, clock.now_ms())
            target.first_dirty = partition.log_start_offset
            if target.first_uncleanable > partition.log_start_offset:
                await cleaner.clean(target)
    await context.close()
    return {"seconds": elapsed, "read": read, "written": written, "records": records, "stall": _percentiles(lags)}


def _percentiles(lags: list[float]) -> str:
    ordered = sorted(lags) or [0.0]
    pick = lambda q: ordered[min(int(len(ordered) * q), len(ordered) - 1)] * 1000  # noqa: E731
    return f"p50 {pick(0.5):.2f} ms, p99 {pick(0.99):.1f} ms, max {ordered[-1] * 1000:.1f} ms over {len(lags)} ticks"


async def idle_stall(seconds: float = 5.0) -> str:
    stop, lags = asyncio.Event(), []
    ticker = asyncio.get_running_loop().create_task(_ticker(stop, lags))
    await asyncio.sleep(seconds)
    stop.set()
    await ticker
    return _percentiles(lags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transactions", type=int, default=100_000)
    parser.add_argument("--txn-ids", type=int, default=16)
    parser.add_argument("--segment-bytes", type=int, default=100 * 1024 * 1024)
    parser.add_argument("--keep", help="build the history here and keep it (default: a temp dir); "
                                       "a history already there is reused")
    args = parser.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="weir-restart-"))
    history, compacted, killed = root / "history", root / "compacted", root / "killed"
    if (history / "meta.properties").exists():
        print(f"reusing the history in {history}")
    else:
        print(f"writing {args.transactions} transactions from {args.txn_ids} transactional ids into {history}")
        began = time.perf_counter()
        asyncio.run(write_history(history, args.transactions, args.txn_ids, args.segment_bytes, killed))
        print(f"  written in {time.perf_counter() - began:.1f} s")
    size = sum(f.stat().st_size for f in history.rglob("*") if f.is_file())
    shutil.rmtree(compacted, ignore_errors=True)
    shutil.copytree(history, compacted)
    stats = asyncio.run(compact(compacted, args.segment_bytes))
    idle = asyncio.run(idle_stall())
    compacted_size = sum(f.stat().st_size for f in compacted.rglob("*") if f.is_file())
    if killed.exists():
        after_kill = time_restart(killed, args.segment_bytes, fresh_copy=True)
        print(f"restart after kill -9:      {after_kill[0]}, {after_kill[1]} records replayed "
              f"({after_kill[2]} transactional ids, {after_kill[3]} groups)")
    full = time_restart(history, args.segment_bytes)
    small = time_restart(compacted, args.segment_bytes)
    print(f"restart after a clean stop: {full[0]}, {full[1]} records replayed, "
          f"{size / 1e6:.1f} MB on disk ({full[2]} transactional ids, {full[3]} groups)")
    print(f"restart fully compacted:    {small[0]}, {small[1]} records replayed, "
          f"{compacted_size / 1e6:.1f} MB on disk ({small[2]} transactional ids, {small[3]} groups)")
    print(f"cleaner first pass: {stats['read'] / 1e6:.1f} MB read, {stats['written'] / 1e6:.1f} MB written, "
          f"{stats['records']} records in {stats['seconds']:.2f} s = "
          f"{stats['read'] / 1e6 / stats['seconds']:.1f} MB/s, "
          f"{stats['records'] / stats['seconds']:.0f} records/s")
    print(f"event-loop lag of a 1 ms timer during the pass: {stats['stall']}")
    print(f"                            with the loop idle: {idle}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
