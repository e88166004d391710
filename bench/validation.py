"""Cost of Produce record validation (broker/log/validator.py) per batch, per record and per MB.

    python -m bench.validation [--repeat 200]

Batches of 1 KiB and of 100-byte records, 16 KiB and 1 MB each, uncompressed
and (for 1 MB) lz4/zstd, as a producer sends them: keyed records, no headers,
timestamps within bounds. The CRC check (C, crc32c) is timed alongside for scale.
"""

from __future__ import annotations

import argparse
import os
import time

from weir.broker.log.validator import TopicPolicy, validate_records
from weir.protocol import records as rec
from weir.protocol.compression import Compression

NOW = 1_700_000_000_000
POLICY = TopicPolicy(compacted=False, log_append_time=False, before_max_ms=2**63 - 1, after_max_ms=3600000,
                     target=None, level=None)


def make_batch(record_size: int, batch_bytes: int, codec: Compression) -> bytes:
    count = max(1, batch_bytes // record_size)
    records = [rec.Record(os.urandom(record_size - 10), key=b"key-%05d" % (i % 100000), timestamp=NOW + i)
               for i in range(count)]
    return rec.encode_batch(records, compression=codec)


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    print(f"{'records':>8} {'batch':>8} {'codec':>5} {'n':>5} {'µs/batch':>9} {'µs/record':>9} {'ms/MB':>7}"
          f" {'crc µs':>7}")
    for record_size in (1024, 100):
        for batch_bytes, codecs in ((16 * 1024, (Compression.NONE,)),
                                    (1024 * 1024, (Compression.NONE, Compression.LZ4, Compression.ZSTD))):
            for codec in codecs:
                batch = make_batch(record_size, batch_bytes, codec)
                view = memoryview(batch)
                header = rec.read_header(batch)
                seconds = best_of(lambda v=view, h=header: validate_records(v, h, NOW, POLICY, "t-0", 10**9),
                                  args.repeat)
                crc = best_of(lambda v=view, h=header: rec.crc_ok(v, 0, h), args.repeat)
                raw_mb = header.records_count * record_size / 1e6
                print(f"{record_size:>7}B {batch_bytes // 1024:>6}Ki {codec.name.lower():>5} "
                      f"{header.records_count:>5} {seconds * 1e6:>9.1f} {seconds * 1e6 / header.records_count:>9.3f}"
                      f" {seconds * 1e3 / raw_mb:>7.2f} {crc * 1e6:>7.1f}")


if __name__ == "__main__":
    main()
