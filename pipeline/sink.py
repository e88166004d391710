"""``df.write.format("weir")`` and ``df.writeStream.format("weir")``: Spark's Kafka sink columns and options.

Batch writes and streaming writes with ``exactlyOnce=false`` use the client's
idempotent Producer: at least once, like Spark's Kafka sink. Streaming writes
are exactly once by default, by the two-phase protocol in ``exactly_once.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from weir.client import Producer, RecordMetadata

from . import options as opt
from .security import KafkaSecurity
from .rows import byte_columns, check_schema, records

class WriteSettings:
    def __init__(self, options: dict[str, str], schema):
        self.bootstrap = opt.bootstrap(options)
        self.topic = options.get("topic")
        check_schema(schema, self.topic)
        self.producer = opt.producer_settings(options)  # every kafka.* producer option, as Spark's sink
        self.security = KafkaSecurity.from_options(options)  # kafka.security.protocol, kafka.sasl.*, kafka.ssl.*


class CountMessage(WriterCommitMessage):
    def __init__(self, records: int):
        self.records = records


#: A row's acknowledgement (``Producer.send``), or an Arrow batch's row count (``Producer.send_arrow``).
Delivery = asyncio.Future[RecordMetadata] | asyncio.Future[int]


async def send_batches(producer: Producer, topic_option: str | None,
                       batches: Iterable[pa.RecordBatch]) -> tuple[list[Delivery], int]:
    """Queue every row of ``batches`` (Arrow record batches in Spark's Kafka sink columns); (the deliveries
    to check once flushed, the row count). Key/value-only batches go as Arrow columns, encoded in C."""
    deliveries: list[Delivery] = []
    rows = 0
    for batch in batches:
        columns = byte_columns(batch, topic_option)
        if columns is None:
            for topic, partition, key, value, headers, timestamp in records([batch], topic_option):
                deliveries.append(await producer.send(topic, value, key, partition=partition, headers=headers,
                                                      timestamp_ms=timestamp))
        else:
            assert topic_option is not None  # byte_columns gives columns only to the topic option's rows
            keys, values = columns
            deliveries.append(await producer.send_arrow(topic_option, keys, values, batch.num_rows))
        rows += batch.num_rows
    return deliveries, rows


async def _produce_all(settings: WriteSettings, batches) -> int:
    async with Producer(settings.bootstrap, **settings.producer, **settings.security.keywords()) as producer:
        deliveries, sent = await send_batches(producer, settings.topic, batches)
        await producer.flush()
        for delivery in deliveries:
            delivery.result()  # raise the first failed delivery
    return sent


class BatchWriter(DataSourceArrowWriter):
    """At least once, as Spark's Kafka batch sink: the idempotent producer, no transaction."""

    def __init__(self, options: dict[str, str], schema):
        self.settings = WriteSettings(options, schema)

    def write(self, iterator) -> CountMessage:
        return CountMessage(asyncio.run(_produce_all(self.settings, iterator)))

    def commit(self, messages) -> None:
        """Every record was acknowledged by its task; nothing is left to commit."""


class AtLeastOnceStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: dict[str, str], schema):
        self.settings = WriteSettings(options, schema)

    def write(self, iterator) -> CountMessage:
        return CountMessage(asyncio.run(_produce_all(self.settings, iterator)))

    def commit(self, messages, batchId: int) -> None:
        """Every record was acknowledged by its task; nothing is left to commit."""

    def abort(self, messages, batchId: int) -> None:
        """Acknowledged records stay (at least once); Spark runs the batch again."""


def query_key(options: dict[str, str]) -> str:
    """The identity of a streaming query across restarts: ``weir.sink.queryId``, else the query id
    Spark keeps in its checkpoint (``<checkpointLocation>/metadata``), which a restart keeps."""
    if options.get("weir.sink.queryid"):
        return options["weir.sink.queryid"]
    location = options.get("checkpointlocation", "")
    path = Path(location.removeprefix("file:"))
    try:
        return json.loads((path / "metadata").read_text())["id"]
    except (OSError, ValueError, KeyError):
        raise opt.OptionError("the exactly-once sink needs a stable query identity: a local checkpointLocation "
                              "holding Spark's query metadata, or the option weir.sink.queryId") from None


def stream_writer(options: dict[str, str], schema, *, planning: bool):
    if not opt.flag(options, "exactlyOnce", True):
        return AtLeastOnceStreamWriter(options, schema)
    from .exactly_once import ExactlyOnceStreamWriter
    return ExactlyOnceStreamWriter(options, schema, query_key(options), planning=planning)
