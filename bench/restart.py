"""Restart time against history: coordinator replay with and without log compaction.

Writes a history of exactly-once transactions in-process through the real
coordinators and log store (each: AddPartitions for a data partition and the
group's offsets partition, a data batch, TxnOffsetCommit, EndTxn(commit) with
its markers; every transactional id commits offsets for its own group), plus
plain offset commits of other groups. Then it copies the data directory,
compacts the copy's internal topics with the log cleaner, and times a start-up
(log store open + replay of ``__transaction_state`` and ``__consumer_offsets``)
of each.

    python -m bench.restart [--transactions 100000] [--txn-ids 16] [--segment-bytes 1048576]

Kafka rolls its internal topics' segments at 100 MiB (offsets.topic.segment.bytes),
and the active segment is never cleaned; a history of this size is a few MiB
per partition, so the benchmark rolls at ``--segment-bytes`` to have sealed
segments to clean. It also reports the cleaner's throughput and how late a
1 ms timer on the event loop fires while a pass runs (next to an idle loop).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

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


async def write_history(data_dir: Path, transactions: int, txn_ids: int, segment_bytes: int) -> None:
    context = make_context(data_dir, segment_bytes)
    context.open()
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
            await context.offsets.commit(f"plain-{n % 32}", partition_offset)
        if n and n % 20000 == 0:
            print(f"  {n} transactions written ({n / (time.perf_counter() - began):.0f}/s)", flush=True)
    await context.close()


def time_restart(data_dir: Path, segment_bytes: int, runs: int = 3) -> tuple[float, int, int, int]:
    """Median seconds of open + replay; records replayed; transactional ids; groups."""
    timings = []
    for _ in range(runs):
        context = make_context(data_dir, segment_bytes)
        began = time.perf_counter()
        context.open()
        timings.append(time.perf_counter() - began)
        replayed = sum(1 for log in (context.txn.log, context.offsets.log) for _entry in log.replay())
        txns, groups = len(context.txn.txns), len(context.groups.groups)
        asyncio.run(context.logs.close())
    return statistics.median(timings), replayed, txns, groups


async def _ticker(stop: asyncio.Event, lags: list[float]) -> None:
    while not stop.is_set():
        began = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter() - began - 0.001)


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
    parser.add_argument("--segment-bytes", type=int, default=1024 * 1024)
    parser.add_argument("--keep", help="build the history here and keep it (default: a temp dir); "
                                       "a history already there is reused")
    args = parser.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="weir-restart-"))
    history, compacted = root / "history", root / "compacted"
    if (history / "meta.properties").exists():
        print(f"reusing the history in {history}")
    else:
        print(f"writing {args.transactions} transactions from {args.txn_ids} transactional ids into {history}")
        began = time.perf_counter()
        asyncio.run(write_history(history, args.transactions, args.txn_ids, args.segment_bytes))
        print(f"  written in {time.perf_counter() - began:.1f} s")
    size = sum(f.stat().st_size for f in history.rglob("*") if f.is_file())
    shutil.rmtree(compacted, ignore_errors=True)
    shutil.copytree(history, compacted)
    stats = asyncio.run(compact(compacted, args.segment_bytes))
    idle = asyncio.run(idle_stall())
    compacted_size = sum(f.stat().st_size for f in compacted.rglob("*") if f.is_file())
    full = time_restart(history, args.segment_bytes)
    small = time_restart(compacted, args.segment_bytes)
    print(f"restart without compaction: {full[0]:.2f} s, {full[1]} records replayed, "
          f"{size / 1e6:.1f} MB on disk ({full[2]} transactional ids, {full[3]} groups)")
    print(f"restart with compaction:    {small[0]:.2f} s, {small[1]} records replayed, "
          f"{compacted_size / 1e6:.1f} MB on disk ({small[2]} transactional ids, {small[3]} groups)")
    print(f"speed-up: {full[0] / small[0]:.1f}x")
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
