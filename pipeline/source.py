"""The ``weir`` data source: Spark's Kafka source and sink options, read and written through Weir's client.

    from weir import pipeline
    pipeline.register(spark)
    df = spark.read.format("weir").option("kafka.bootstrap.servers", "...").option("subscribe", "orders").load()

Switching a job between Spark's Kafka connector and this one is the format
name: the options and the columns are the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from weir.client import Consumer

from . import options as opt
from .security import KafkaSecurity
from .planner import OffsetRange, ending_offsets, partitions_of, ranges, starting_offsets
from .reader import read_range, schema

if TYPE_CHECKING:
    import pyarrow as pa


class RangePartition(InputPartition):
    """One Spark input partition: one offset range of one topic-partition."""

    def __init__(self, piece: OffsetRange):
        super().__init__(piece)
        self.piece = piece


class ReadSettings:
    """What every task needs to read: picklable, parsed once on the driver."""

    def __init__(self, options: dict[str, str]):
        self.bootstrap = opt.bootstrap(options)
        self.client = opt.client_settings(options)
        self.security = KafkaSecurity.from_options(options)
        self.subscription = opt.subscription(options)
        self.include_headers = opt.flag(options, "includeHeaders", False)
        self.fail_on_data_loss = opt.flag(options, "failOnDataLoss", True)
        self.min_partitions = opt.positive_int(options, "minPartitions")
        self.max_records = opt.positive_int(options, "maxRecordsPerPartition")
        self.timestamps = opt.timestamp_spec(options)
        self.by_timestamp_strategy = opt.by_timestamp_strategy(options)
        # groupIdPrefix and kafka.group.id are accepted and unused: Spark uses them only to name the
        # consumer groups it never commits to; this source reads by assignment without a group.
        self.poll_timeout_ms = int(options.get("kafkaconsumer.polltimeoutms", "1000"))

    def consumer(self) -> Consumer:
        return Consumer(bootstrap_servers=self.bootstrap, **self.client, **self.security.keywords())

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # ``value`` (InputPartition's own attribute), not ``piece``: Spark has been seen handing the task
        # a plain InputPartition carrying the value, after a Python worker failed to start. When the plan
        # has no range at all (nothing to read), Spark still runs one task with InputPartition(None).
        if partition.value is None:
            return iter(())
        return read_range(self.bootstrap, {**self.client, **self.security.keywords()}, partition.value,
                          include_headers=self.include_headers,
                          fail_on_data_loss=self.fail_on_data_loss, poll_timeout_ms=self.poll_timeout_ms)


class WeirDataSource(DataSource):
    # Spark builds a fresh instance to plan a write and unpickles one to commit each micro-batch;
    # the exactly-once writer may fence transactional ids only in the first (see exactly_once.py).
    _unpickled = False

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._unpickled = True

    @classmethod
    def name(cls) -> str:
        return "weir"

    def schema(self) -> str:
        return schema(opt.flag(opt.lower(self.options), "includeHeaders", False))

    def reader(self, schema) -> BatchReader:
        return BatchReader(opt.lower(self.options))

    def streamReader(self, schema):
        from .stream import StreamReader
        return StreamReader(opt.lower(self.options))

    def writer(self, schema, overwrite: bool):
        from .sink import BatchWriter
        return BatchWriter(opt.lower(self.options), schema)

    def streamWriter(self, schema, overwrite: bool):
        from .sink import stream_writer
        return stream_writer(opt.lower(self.options), schema, planning=not self._unpickled)


class BatchReader(DataSourceReader):
    def __init__(self, options: dict[str, str]):
        self.settings = ReadSettings(options)
        if self.settings.timestamps is None and options.get("startingoffsets", "").lower() == "latest":
            raise opt.OptionError("Option 'startingOffsets' can not be latest for a batch query")
        if options.get("endingoffsets", "").lower() == "earliest":
            raise opt.OptionError("Option 'endingOffsets' can not be earliest for a batch query")
        self.starting = opt.offset_spec(options.get("startingoffsets"), "earliest", option="startingOffsets")
        self.ending = opt.offset_spec(options.get("endingoffsets"), "latest", option="endingOffsets")
        self.ending_timestamps = opt.timestamp_spec(options, "ending")

    def partitions(self):
        return [RangePartition(piece) for piece in asyncio.run(self._plan())]

    async def _plan(self) -> list[OffsetRange]:
        settings = self.settings
        async with settings.consumer() as consumer:
            tps = await partitions_of(consumer, settings.subscription)
            start = await starting_offsets(consumer, tps, self.starting, settings.timestamps,
                                           by_timestamp_strategy=settings.by_timestamp_strategy,
                                           fail_on_data_loss=settings.fail_on_data_loss)
            end = await ending_offsets(consumer, tps, self.ending, self.ending_timestamps)
        return ranges(start, end, settings.min_partitions, settings.max_records)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self.settings.read(partition)
