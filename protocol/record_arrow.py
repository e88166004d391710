"""The consumer's record walk into Arrow: v2 batch bodies to one ``pyarrow.RecordBatch``.

Columns (``SCHEMA``): ``key`` and ``value`` binary, ``offset`` int64, ``timestamp`` timestamp[ms, UTC],
``timestamp_type`` int8 (0 CreateTime, 1 LogAppendTime), ``headers`` list<struct<key: string,
value: binary>>. The mirror of ``Producer.send_arrow``, which encodes Arrow columns into batches.

``RecordColumns`` gathers the bodies: ``add(body, count, base_offset, base_timestamp,
log_append_time, timestamp_type, position, limit)`` appends the records at or after ``position``,
at most ``limit`` rows in all, and returns the offset after the last record it took (-1: none);
``record_batch(columns)`` ends the gathering. The C twin (protocol/_record_arrow.c) writes the
Arrow buffers directly, with no Python object per record, and pyarrow wraps them without a copy;
this module's pure-Python one (used when the extension is not built, and the reference its tests
compare with) goes through the tuple walk of record_decode.py. Malformed input raises
``DecodeError`` (``UnicodeDecodeError`` for a header name that is not UTF-8).

pyarrow is imported on first use: it is an optional dependency (the ``arrow`` extra).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from .primitives import DecodeError
from .record_decode import c_walk, decode_python

if TYPE_CHECKING:
    import pyarrow as pa
    from typing_extensions import Buffer


@cache
def schema() -> pa.Schema:
    import pyarrow as pa
    header = pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
    return pa.schema([pa.field("key", pa.binary()), pa.field("value", pa.binary()),
                      pa.field("offset", pa.int64(), nullable=False),
                      pa.field("timestamp", pa.timestamp("ms", tz="UTC"), nullable=False),
                      pa.field("timestamp_type", pa.int8(), nullable=False),
                      pa.field("headers", pa.list_(pa.field("item", header, nullable=False)), nullable=False)])


class Columns(Protocol):
    """What ``RecordColumns()`` makes, C or Python."""

    @property
    def rows(self) -> int: ...
    def reserve(self, nbytes: int) -> None: ...
    def add(self, body: Buffer, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None,
            timestamp_type: int, position: int, limit: int) -> int: ...
    def add_rows(self, rows: list[tuple[Any, ...]]) -> None: ...
    def record_batch(self) -> pa.RecordBatch: ...


class RecordColumnsPython:
    """The reference: record_decode's tuples gathered into lists, built into arrays at the end."""

    def reserve(self, nbytes: int) -> None:
        pass  # lists grow as they go

    def __init__(self) -> None:
        self.rows_of: list[tuple[Any, ...]] = []

    @property
    def rows(self) -> int:
        return len(self.rows_of)

    def add(self, body: Buffer, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None,
            timestamp_type: int, position: int, limit: int) -> int:
        next_offset = -1
        for offset, timestamp, key, value, headers in decode_python(body, count, base_offset, base_timestamp,
                                                                    log_append_time):
            if not -(1 << 63) <= offset < (1 << 63) or not -(1 << 63) <= timestamp < (1 << 63):
                raise DecodeError("offset or timestamp out of range")
            if len(self.rows_of) >= limit:
                break
            if offset >= position:
                self.rows_of.append((key, value, offset, timestamp, timestamp_type, headers))
                next_offset = offset + 1
        return next_offset

    def add_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """Rows already decoded, as (key, value, offset, timestamp, timestamp_type, headers)."""
        self.rows_of.extend(rows)

    def record_batch(self) -> pa.RecordBatch:
        import pyarrow as pa
        columns: list[Any] = list(zip(*self.rows_of, strict=True)) or [[] for _ in schema()]
        self.rows_of = []
        arrays = [pa.array(list(column), type=field.type) for column, field in zip(columns, schema(), strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=schema())


def _record_batch_c(columns: Any) -> pa.RecordBatch:
    import pyarrow as pa
    parts = columns.finish()
    rows, headers = parts["rows"], parts["headers"]
    buf = {name: pa.py_buffer(value) for name, value in parts.items() if not isinstance(value, int)}

    def binary(prefix: str, length: int, nulls: int) -> pa.Array:
        validity = buf[f"{prefix}_validity"] if nulls else None
        return pa.Array.from_buffers(pa.binary(), length, [validity, buf[f"{prefix}_offsets"], buf[f"{prefix}_data"]],
                                     null_count=nulls)

    fields = schema()
    header_type = fields.field("headers").type
    header_keys = pa.Array.from_buffers(pa.string(), headers, [None, buf["header_key_offsets"],
                                                                buf["header_key_data"]], null_count=0)
    header_values = binary("header_value", headers, parts["header_value_nulls"])
    header_structs = pa.Array.from_buffers(header_type.value_type, headers, [None], null_count=0,
                                           children=[header_keys, header_values])
    arrays = [
        binary("key", rows, parts["key_nulls"]),
        binary("value", rows, parts["value_nulls"]),
        pa.Array.from_buffers(pa.int64(), rows, [None, buf["offset"]], null_count=0),
        pa.Array.from_buffers(fields.field("timestamp").type, rows, [None, buf["timestamp"]], null_count=0),
        pa.Array.from_buffers(pa.int8(), rows, [None, buf["timestamp_type"]], null_count=0),
        pa.Array.from_buffers(header_type, rows, [None, buf["header_offsets"]], null_count=0,
                              children=[header_structs]),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=fields)


class _RecordColumnsC:
    """The C columns, with their errors as DecodeError, as record_decode's C walk."""

    __slots__ = ("_columns", "_decoded")

    def __init__(self) -> None:
        self._columns = _record_arrow.RecordColumns()
        self._decoded: RecordColumnsPython | None = None  # rows added as tuples; they come first

    @property
    def rows(self) -> int:
        rows: int = self._columns.rows
        return rows + (self._decoded.rows if self._decoded is not None else 0)

    def reserve(self, nbytes: int) -> None:
        self._columns.reserve(nbytes)

    def add_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """Rows already decoded, as (key, value, offset, timestamp, timestamp_type, headers): the consumer's
        records of an answer ``getmany`` began; they precede every row ``add`` appends."""
        if self._decoded is None:
            self._decoded = RecordColumnsPython()
        self._decoded.add_rows(rows)

    def add(self, body: Buffer, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None,
            timestamp_type: int, position: int, limit: int) -> int:
        next_offset: int = c_walk(self._columns.add, body, count, base_offset, base_timestamp, log_append_time,
                                  timestamp_type, position, limit - self.rows + self._columns.rows)
        return next_offset

    def record_batch(self) -> pa.RecordBatch:
        batch = _record_batch_c(self._columns)
        if self._decoded is None:
            return batch
        import pyarrow as pa
        first, self._decoded = self._decoded.record_batch(), None
        if not batch.num_rows:
            return first
        return pa.Table.from_batches([first, batch]).combine_chunks().to_batches()[0]


def _bytearray_frame(size: int) -> memoryview:
    return memoryview(bytearray(size))


def _cached_frame(size: int) -> memoryview:
    return memoryview(_record_arrow.frame(size))


RecordColumns: type[Columns]
#: ``frame_buffer(size)``: a writable buffer for a large answer to be received into. The C one comes
#: uninitialized from the block cache the columns use (a consumer frees such blocks at the rate it
#: allocates them, so after the first answers no page is faulted in or cleared again).
frame_buffer: Callable[[int], memoryview]
try:
    from . import _record_arrow
    RecordColumns = _RecordColumnsC
    frame_buffer = _cached_frame
    ACCELERATED = True
except ImportError:  # no compiler at install time: the reference walk serves
    RecordColumns = RecordColumnsPython
    frame_buffer = _bytearray_frame
    ACCELERATED = False
