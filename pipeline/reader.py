"""Task-side reading of one offset range into Arrow record batches.

Each Spark task runs the client's async Consumer on its own event loop
(``asyncio.Runner``: ``asyncio.run``'s machinery, kept open so the generator
can hand Spark a batch as soon as it is built instead of holding the range).
The consumer is assigned the one partition and seeks to the range's start, so
read_committed filtering (aborted transactions, markers) is the client's; records come as Arrow
columns built in C (``Consumer.getmany_arrow``), never as a Python object each.
"""

from __future__ import annotations

import asyncio
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


_TIMESTAMP = pa.timestamp("us", tz="UTC")
_NAMES = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def to_spark(batch: pa.RecordBatch, topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
    """A batch of ``Consumer.getmany_arrow`` in the source's schema: the constant topic and partition
    repeated, timestamps in microseconds, the timestamp type an int (all column-wise, in Arrow)."""
    count = batch.num_rows
    columns = [
        batch.column("key"),
        batch.column("value"),
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        batch.column("offset"),
        batch.column("timestamp").cast(_TIMESTAMP),
        batch.column("timestamp_type").cast(pa.int32()),
    ]
    names = list(_NAMES)
    if include_headers:
        columns.append(batch.column("headers").cast(pa.list_(_HEADER)))
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
    pending: list[pa.RecordBatch] = []
    held = 0
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
                fetched = runner.run(consumer.getmany_arrow(tp, timeout_ms=poll_timeout_ms,
                                                            max_records=ROWS_PER_BATCH))
                batch = fetched.get(tp)
                if batch is not None:
                    inside = pc.sum(pc.less(batch.column("offset"), piece.end)).as_py() or 0  # offsets ascend
                    if inside:
                        pending.append(batch.slice(0, inside))
                        held += inside
                start = runner.run(consumer.position(tp))
                if held >= ROWS_PER_BATCH and start < piece.end:
                    yield _joined(pending, piece, include_headers)
                    pending, held = [], 0
        finally:
            runner.run(consumer.close())
    if pending:
        yield _joined(pending, piece, include_headers)


def _joined(batches: list[pa.RecordBatch], piece: OffsetRange, include_headers: bool) -> pa.RecordBatch:
    joined = batches[0] if len(batches) == 1 else \
        pa.Table.from_batches(batches).combine_chunks().to_batches(max_chunksize=None)[0]
    return to_spark(joined, piece.topic, piece.partition, include_headers)
