"""How long a clean shutdown of many partitions takes when every one was written since its
last producer snapshot (each has a producer's batch and unflushed data).

    python -m bench.shutdown [--partitions 3000] [--per-file-fsync]

``--per-file-fsync`` closes each partition with its own fsyncs (segment, directory,
snapshot), as the broker did before ``LogManager.close`` synced the filesystem once.
The data directory is a temporary directory under ``--dir`` (default: the system's).

On the project's 2-core VM (ext4, under load from others' tests, where creating a
file took 2-3 ms): 3,000 written partitions, an fsync per file 40.7 s and 11.6 s in
two runs; one checkpoint file and one syncfs 0.16 s.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.log import disk
from weir.broker.log.manager import LogManager
from weir.protocol import records as rec


async def measure(partitions: int, per_file_fsync: bool, parent: str | None) -> float:
    data_dir = Path(tempfile.mkdtemp(prefix="weir-shutdown-", dir=parent))
    try:
        logs = LogManager(data_dir, BrokerConfig({"max.broker.partitions": str(partitions + 200)}), ManualClock())
        logs.open()
        for partition in logs.create_topic("wide", partitions).partitions:
            batch = rec.encode_batch([rec.Record(b"v" * 100)], producer_id=7, producer_epoch=0, base_sequence=0)
            await partition.append_client_batch(memoryview(batch), rec.read_header(batch), 0)
        disk.sync_filesystem(data_dir)  # the topic's creation out of the way: only the shutdown is timed
        if per_file_fsync:
            began = time.perf_counter()
            await logs.cleaner.stop()
            for topic in logs.topics.values():
                for partition in topic.partitions:
                    partition.close(sync=True)
        else:
            began = time.perf_counter()
            await logs.close()
        return time.perf_counter() - began
    finally:
        shutil.rmtree(data_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--per-file-fsync", action="store_true")
    parser.add_argument("--dir", help="where to make the data directory")
    args = parser.parse_args()
    seconds = asyncio.run(measure(args.partitions, args.per_file_fsync, args.dir))
    how = "an fsync per file" if args.per_file_fsync else "one syncfs"
    print(f"clean shutdown of {args.partitions} written partitions ({how}): {seconds:.2f} s")


if __name__ == "__main__":
    main()
