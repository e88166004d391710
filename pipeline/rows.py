"""The sink's input columns, as Spark's Kafka sink reads them: value (required), key, headers, topic, partition."""

from __future__ import annotations

import time
from typing import Iterator

import pyarrow as pa

from .options import OptionError

SINK_COLUMNS = {"key", "value", "headers", "topic", "partition"}


def check_schema(schema, topic_option: str | None) -> None:
    names = {field.name.lower() for field in schema.fields}
    if "value" not in names:
        raise OptionError("Required attribute 'value' not found")
    if topic_option is None and "topic" not in names:
        raise OptionError("topic option required when no 'topic' attribute is present. "
                          "Use the topic option for setting a topic.")


def _as_bytes(value) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def records(batches: Iterator[pa.RecordBatch], topic_option: str | None):
    """(topic, partition or None, key, value, headers, timestamp ms) per row; the ``topic`` option
    overrides the column, as in Spark's Kafka sink."""
    for batch in batches:
        columns = {name.lower(): batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)}
        count = batch.num_rows
        values = columns["value"]
        keys = columns.get("key", [None] * count)
        topics = [topic_option] * count if topic_option is not None else columns["topic"]
        partitions = columns.get("partition", [None] * count)
        headers = columns.get("headers", [None] * count)
        now = int(time.time() * 1000)
        for i in range(count):
            if topics[i] is None:
                raise OptionError("null topic present in the data. Use the topic option for setting a topic.")
            row_headers = [(h["key"], _as_bytes(h["value"])) for h in headers[i]] if headers[i] else None
            yield topics[i], partitions[i], _as_bytes(keys[i]), _as_bytes(values[i]), row_headers, now
