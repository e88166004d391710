"""``spark.readStream.format("weir")``: micro-batches over per-partition offset ranges.

Offsets are Spark's Kafka source JSON ({"topic": {"0": 42}}) and live only in
the query's checkpoint: a restarted query asks for the ranges after its last
committed batch and reads them again if that batch did not commit.

The driver side keeps one consumer (and its event loop) open between
triggers; it is not pickled into the tasks, which open their own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows


from . import options as opt
from .planner import DataLossError, bounds, partitions_of, rate_limited, ranges, starting_offsets
from weir.client import Consumer

from .source import RangePartition, ReadSettings

if TYPE_CHECKING:
    import pyarrow as pa

T = TypeVar("T")


class StreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]):
        self.settings = ReadSettings(options)
        if {"endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp"} & set(options):
            raise opt.OptionError("Ending offsets are not valid in streaming queries (as in Spark's Kafka source)")
        self.starting = opt.offset_spec(options.get("startingoffsets"), "latest", option="startingOffsets")
        self.max_offsets = opt.positive_int(options, "maxOffsetsPerTrigger")
        self.min_offsets = opt.positive_int(options, "minOffsetsPerTrigger")
        self.max_trigger_delay_ms = opt.duration_ms(options, "maxTriggerDelay", "15m")
        # Wall-clock milliseconds of the last batch let through; 0 lets the first trigger of a run through
        # whatever it finds, as Spark's Kafka source does.
        self._last_trigger_ms = 0
        self._driver: tuple[asyncio.Runner, Consumer] | None = None  # the kept-open loop and consumer

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_driver"] = None
        return state

    def _run(self, coroutine_function: Callable[[Consumer], Coroutine[Any, Any, T]]) -> T:
        """Run one driver-side call on the kept-open loop and consumer."""
        if self._driver is None:
            runner, consumer = asyncio.Runner(), self.settings.consumer()
            runner.run(consumer.start())
            self._driver = runner, consumer
        runner, consumer = self._driver
        return runner.run(coroutine_function(consumer))

    def initialOffset(self) -> dict:
        async def resolve(consumer):
            tps = await partitions_of(consumer, self.settings.subscription)
            return await starting_offsets(consumer, tps, self.starting, self.settings.timestamps,
                                          by_timestamp_strategy=self.settings.by_timestamp_strategy,
                                          fail_on_data_loss=self.settings.fail_on_data_loss)
        return opt.offsets_json(self._run(resolve))

    def getDefaultReadLimit(self):
        # PySpark has no composite limit: with both bounds the minimum is applied by latestOffset itself.
        if self.max_offsets is not None:
            return ReadMaxRows(self.max_offsets)
        return ReadAllAvailable() if self.min_offsets is None else ReadMinRows(self.min_offsets)

    def _delay(self, available: int, now: int) -> bool:
        """minOffsetsPerTrigger (set): hold the batch back while fewer offsets are available, unless
        maxTriggerDelay has passed since the last batch (Spark's rule); ``now`` in wall-clock ms."""
        assert self.min_offsets is not None  # latestOffset asks only when the option is set
        if now - self._last_trigger_ms >= self.max_trigger_delay_ms or available >= self.min_offsets:
            self._last_trigger_ms = now
            return False
        return True

    def latestOffset(self, start: dict, limit) -> dict:
        begin = opt.offsets_from_json(start)

        async def latest(consumer):
            tps = await partitions_of(consumer, self.settings.subscription)
            earliest, newest = await bounds(consumer, tps)
            return tps, earliest, newest
        tps, earliest, newest = self._run(latest)
        gone = set(begin) - set(tps)
        if gone and self.settings.fail_on_data_loss:
            raise DataLossError(f"partitions {sorted(gone)} are gone (set failOnDataLoss=false to carry on)")
        # Partitions that appeared since the last batch are read from their beginning, as Spark does.
        current = {tp: begin.get(tp, earliest[tp]) for tp in tps}
        if self.min_offsets is not None and not isinstance(limit, ReadAllAvailable):
            if self._delay(sum(max(0, newest[tp] - current[tp]) for tp in tps), int(time.time() * 1000)):
                return opt.offsets_json(current)
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = rate_limited(current, newest, cap)
        return opt.offsets_json({tp: max(end[tp], current[tp]) for tp in tps})

    def reportLatestOffset(self):
        return None

    def partitions(self, start: dict, end: dict):
        begin, finish = opt.offsets_from_json(start), opt.offsets_from_json(end)
        new = [tp for tp in finish if tp not in begin]
        if new:
            async def earliest(consumer):
                return (await bounds(consumer, new))[0]
            begin.update(self._run(earliest))
        return [RangePartition(piece) for piece in ranges(begin, finish, self.settings.min_partitions,
                                                          self.settings.max_records)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self.settings.read(partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets are in Spark's checkpoint, not in a consumer group."""

    def stop(self) -> None:
        if self._driver is not None:
            runner, consumer = self._driver
            runner.run(consumer.close())
            runner.close()
            self._driver = None


