"""The sink's input columns, as Spark's Kafka sink reads them: value (required), key, headers, topic, partition."""

from __future__ import annotations

import time
from itertools import repeat
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, cast

import pyarrow as pa

from weir.protocol.record_builder import arrow_column

from .options import OptionError

if TYPE_CHECKING:
    from weir.protocol.record_builder import ArrowColumn

#: A record header as the sink's ``headers`` column gives it: (key, value or None).
Header = tuple[str, bytes | None]
#: One row to send: (topic, partition or None, key, value, headers or None, timestamp ms).
Row = tuple[str, int | None, bytes | None, bytes | None, list[Header] | None, int]

SINK_COLUMNS = {"key", "value", "headers", "topic", "partition"}


def check_schema(schema, topic_option: str | None) -> None:
    names = {field.name.lower() for field in schema.fields}
    if "value" not in names:
        raise OptionError("Required attribute 'value' not found")
    if topic_option is None and "topic" not in names:
        raise OptionError("topic option required when no 'topic' attribute is present. "
                          "Use the topic option for setting a topic.")


def _as_bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def _byte_column(column: pa.Array) -> list[bytes | None]:
    """A key or value column as bytes (or None): binary as is, anything else as its UTF-8 text."""
    rows = column.to_pylist()
    if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type) or pa.types.is_null(column.type):
        return rows
    return [_as_bytes(v) for v in rows]


def byte_columns(batch: pa.RecordBatch, topic_option: str | None) -> tuple[ArrowColumn, ArrowColumn] | None:
    """(keys, values) of ``batch`` as ``arrow_column`` specs when its rows need nothing but a key and a
    value written to the ``topic`` option (the sink's common case: encoded in C straight from the Arrow
    buffers); None when a row needs the per-row path (headers, topic or partition columns, keys or
    values that are not binary or text)."""
    if topic_option is None:
        return None
    columns = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
    if "headers" in columns or "partition" in columns:
        return None
    try:
        return arrow_column(columns.get("key")), arrow_column(columns["value"])
    except TypeError:
        return None


def records(batches: Iterable[pa.RecordBatch], topic_option: str | None) -> Iterator[Row]:
    """(topic, partition or None, key, value, headers, timestamp ms) per row; the ``topic`` option
    overrides the column, as in Spark's Kafka sink."""
    for batch in batches:
        columns = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
        count = batch.num_rows
        values = _byte_column(columns["value"])
        keys: Iterable[bytes | None] = _byte_column(columns["key"]) if "key" in columns else repeat(None, count)
        topics: Iterable[str]
        if topic_option is not None:
            topics = repeat(topic_option, count)
        else:
            column_topics: list[str | None] = columns["topic"].to_pylist()
            if None in column_topics:
                raise OptionError("null topic present in the data. Use the topic option for setting a topic.")
            topics = cast(list[str], column_topics)  # no None in it, checked above
        partitions: Iterable[int | None] = (columns["partition"].to_pylist() if "partition" in columns
                                            else repeat(None, count))
        headers: Iterable[list[Header] | None]
        if "headers" in columns:
            headers = [[(h["key"], _as_bytes(h["value"])) for h in row] if row else None
                       for row in columns["headers"].to_pylist()]
        else:
            headers = repeat(None, count)
        yield from zip(topics, partitions, keys, values, headers, repeat(int(time.time() * 1000), count),
                          strict=True)
