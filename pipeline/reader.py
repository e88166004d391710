"""Task-side reading of one offset range into Arrow record batches.

Each Spark task runs the client's async Consumer on its own event loop
(``asyncio.Runner``: ``asyncio.run``'s machinery, kept open so the generator
can hand Spark a batch as soon as it is built instead of holding the range).
The consumer is assigned the one partition and seeks to the range's start, so
read_committed filtering (aborted transactions, markers) is the client's.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from weir.client import Consumer, TopicPartition

from .planner import DataLossError, OffsetRange

SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
          "timestampType int")
HEADERS_SCHEMA = SCHEMA + ", headers array<struct<key: string, value: binary>>"

_HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
ROWS_PER_BATCH = 8192


def schema(include_headers: bool) -> str:
    return HEADERS_SCHEMA if include_headers else SCHEMA


_FIELDS = operator.attrgetter("key", "value", "offset", "timestamp", "timestamp_type")
_TIMESTAMP = pa.timestamp("us", tz="UTC")


def to_arrow(records, include_headers: bool) -> pa.RecordBatch:
    """One partition's records as a batch: the columns are transposed in one pass (zip), the constant
    topic and partition repeated, the timestamps scaled in Arrow."""
    count = len(records)
    transposed = zip(*map(_FIELDS, records), strict=True) if count else ((),) * 5
    keys, values, offsets, timestamps, timestamp_types = transposed
    first = records[0] if count else None
    millis = pa.array(timestamps, pa.int64())
    columns = [
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.repeat(pa.scalar(first.topic if first else "", pa.string()), count),
        pa.repeat(pa.scalar(first.partition if first else 0, pa.int32()), count),
        pa.array(offsets, pa.int64()),
        pc.multiply(millis, 1000).cast(_TIMESTAMP),
        pa.array(timestamp_types, pa.int32()),
    ]
    names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    if include_headers:
        columns.append(pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in records],
                                pa.list_(_HEADER)))
        names.append("headers")
    return pa.RecordBatch.from_arrays(columns, names=names)


def read_range(bootstrap: str, settings: dict, piece: OffsetRange, *, include_headers: bool,
               fail_on_data_loss: bool, poll_timeout_ms: int = 1000) -> Iterator[pa.RecordBatch]:
    """The visible records of ``piece`` as Arrow batches of at most ROWS_PER_BATCH rows (the last may
    hold up to twice that).

    The consumer and its event loop are closed before the last batch is handed over: Spark need not
    resume the generator after it, and a generator finalised later by the garbage collector, while the
    next task's event loop runs in this thread, could no longer close them (their connections' tasks
    would be destroyed pending)."""
    tp = TopicPartition(piece.topic, piece.partition)
    pending: list = []
    with asyncio.Runner() as runner:
        consumer = Consumer(bootstrap_servers=bootstrap, **settings)
        runner.run(consumer.start())
        try:
            consumer.assign([tp])
            start = piece.start
            log_start = runner.run(consumer.beginning_offsets([tp]))[tp]
            if start < log_start:
                if fail_on_data_loss:
                    raise DataLossError(f"{tp} offsets {start}..{log_start - 1} were deleted before they were read "
                                        "(set failOnDataLoss=false to skip them)")
                start = log_start
            consumer.seek(tp, start)
            while start < piece.end:
                fetched = runner.run(consumer.getmany(tp, timeout_ms=poll_timeout_ms, max_records=ROWS_PER_BATCH))
                for record in fetched.get(tp, ()):
                    if record.offset < piece.end:
                        pending.append(record)
                start = runner.run(consumer.position(tp))
                if len(pending) >= ROWS_PER_BATCH and start < piece.end:
                    yield to_arrow(pending, include_headers)
                    pending = []
        finally:
            runner.run(consumer.close())
    if pending:
        yield to_arrow(pending, include_headers)
