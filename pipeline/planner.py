"""Driver-side planning: which partitions a query reads and between which offsets.

Offsets are resolved with ListOffsets through the client (under read_committed
``latest`` is the last stable offset, as with Spark's Kafka source). A range
per topic-partition becomes one Spark input partition; ``minPartitions`` splits
the larger ranges further, as Spark's ``KafkaOffsetRangeCalculator`` does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from weir.client import Consumer, TopicPartition
from weir.client.consumer.fetcher import EARLIEST as LIST_EARLIEST
from weir.client.consumer.fetcher import LATEST as LIST_LATEST
from weir.protocol.errors import Errors

from .options import EARLIEST, LATEST, OptionError, Subscription

# Kafka's internal topics, left out of pattern subscriptions (exclude.internal.topics=true).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class DataLossError(RuntimeError):
    """Offsets a query needs are gone (deleted, or the partition vanished) and failOnDataLoss is true."""


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int  # exclusive

    @property
    def size(self) -> int:
        return self.end - self.start


async def partitions_of(consumer: Consumer, sub: Subscription) -> list[TopicPartition]:
    cluster = consumer.cluster
    names: Iterable[str]
    if sub.kind == "assign":
        await cluster.refresh(sorted({tp.topic for tp in sub.partitions}), allow_auto_create=False)
        return sorted(sub.partitions)
    if sub.kind == "subscribe":
        await cluster.refresh(list(sub.topics), allow_auto_create=False)
        names = sub.topics
    else:
        await cluster.refresh(None, allow_auto_create=False)
        assert sub.pattern is not None  # options.py gives subscribePattern its pattern
        pattern = re.compile(sub.pattern)  # Java's Matcher.matches(): the whole name
        names = [name for name in cluster.topics if pattern.fullmatch(name) and name not in INTERNAL_TOPICS]
    found = []
    for name in names:
        info = cluster.topics.get(name)
        if info is None or info.error == Errors.UNKNOWN_TOPIC_OR_PARTITION:
            continue  # a subscribed topic that does not exist reads as empty, as in Spark's source
        if info.error or not info.partitions:
            # A transient answer (LEADER_NOT_AVAILABLE while a busy broker elects): wait for the topic
            # rather than plan it away as empty.
            await cluster.partitions_for(name)
            info = cluster.topics[name]
        found += [TopicPartition(name, p) for p in info.partitions]
    return sorted(found)


async def _listed(consumer: Consumer, tps, spec: int) -> dict[TopicPartition, int]:
    if not tps:
        return {}
    return {tp: offset for tp, (offset, _ts) in (await consumer.fetcher.list_offsets(
        {tp: spec for tp in tps})).items()}


async def bounds(consumer: Consumer, tps) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """(log start offsets, latest offsets: the LSO under read_committed, else the high watermark)."""
    return await _listed(consumer, tps, LIST_EARLIEST), await _listed(consumer, tps, LIST_LATEST)


#: What options.py makes of a {starting,ending}Offsets option, and of a {side}Timestamp / OffsetsByTimestamp one.
OffsetSpec = str | dict[TopicPartition, int]
TimestampSpec = int | dict[TopicPartition, int] | None


async def starting_offsets(consumer: Consumer, tps: list[TopicPartition], spec: OffsetSpec,
                           timestamps: TimestampSpec, *, by_timestamp_strategy: str,
                           fail_on_data_loss: bool) -> dict[TopicPartition, int]:
    """Where reading starts for each partition; timestamps win over ``spec`` (Spark's precedence)."""
    earliest, latest = await bounds(consumer, tps)
    if timestamps is not None:
        wanted = {tp: timestamps for tp in tps} if isinstance(timestamps, int) else dict(timestamps)
        missing = [tp for tp in tps if tp not in wanted]
        if missing:
            raise OptionError(f"startingOffsetsByTimestamp has no timestamp for {missing}")
        found = await consumer.offsets_for_times(wanted)
        out = {}
        for tp in tps:
            if (hit := found.get(tp)) is not None:
                out[tp] = hit[0]
            elif by_timestamp_strategy == "latest":
                out[tp] = latest[tp]
            else:
                raise OptionError(f"No offset matched the timestamp {wanted[tp]} of {tp} "
                                  "(startingOffsetsByTimestampStrategy=error)")
        return out
    return _explicit(tps, spec, earliest, latest, option="startingOffsets", fail_on_data_loss=fail_on_data_loss)


async def ending_offsets(consumer: Consumer, tps: list[TopicPartition], spec: OffsetSpec,
                         timestamps: TimestampSpec = None) -> dict[TopicPartition, int]:
    """Where a batch read stops (exclusive); endingTimestamp/endingOffsetsByTimestamp win over ``spec``.
    A partition with no record at or after its timestamp ends at latest, as in Spark."""
    earliest, latest = await bounds(consumer, tps)
    if timestamps is not None:
        wanted = {tp: timestamps for tp in tps} if isinstance(timestamps, int) else dict(timestamps)
        missing = [tp for tp in tps if tp not in wanted]
        if missing:
            raise OptionError(f"endingOffsetsByTimestamp has no timestamp for {missing}")
        found = await consumer.offsets_for_times(wanted)
        return {tp: hit[0] if (hit := found.get(tp)) is not None else latest[tp] for tp in tps}
    if isinstance(spec, dict) and any(offset == EARLIEST for offset in spec.values()):
        raise OptionError("Ending offset for a partition can not be earliest (-2) in a batch query")
    return _explicit(tps, spec, earliest, latest, option="endingOffsets", fail_on_data_loss=True)


def _explicit(tps, spec, earliest, latest, *, option: str, fail_on_data_loss: bool) -> dict[TopicPartition, int]:
    if spec == "earliest":
        return {tp: earliest[tp] for tp in tps}
    if spec == "latest":
        return {tp: latest[tp] for tp in tps}
    if set(spec) != set(tps):
        raise OptionError(f"{option} {sorted(spec)} does not match the assigned partitions {tps}")
    out = {}
    for tp in tps:
        offset = spec[tp]
        if offset == EARLIEST:
            out[tp] = earliest[tp]
        elif offset == LATEST:
            out[tp] = latest[tp]
        elif offset < earliest[tp]:
            if fail_on_data_loss:
                raise DataLossError(f"{option} asks for {tp} at {offset}, but the log starts at {earliest[tp]} "
                                    "(set failOnDataLoss=false to start from the earliest offset)")
            out[tp] = earliest[tp]
        else:
            out[tp] = offset
    return out


def ranges(start: dict[TopicPartition, int], end: dict[TopicPartition, int],
           min_partitions: int | None = None, max_records: int | None = None) -> list[OffsetRange]:
    """Non-empty ranges, none over ``max_records`` offsets (maxRecordsPerPartition), then split so
    there are at least ``min_partitions`` of them when the data allows (Spark applies both in this order)."""
    whole = [OffsetRange(tp.topic, tp.partition, start[tp], end[tp])
             for tp in sorted(end) if tp in start and end[tp] > start[tp]]
    if max_records:
        whole = [piece for r in whole for piece in _split(r, math.ceil(r.size / max_records))]
    if not min_partitions or min_partitions <= len(whole):
        return whole
    total = sum(r.size for r in whole)
    out = []
    for r in whole:
        # Each range's share of min_partitions by its share of the data. Spark rounds the share, which
        # can leave fewer pieces than minPartitions promises; rounding up keeps the promise.
        out += _split(r, max(1, min(r.size, math.ceil(r.size * min_partitions / total))))
    return out


def _split(r: OffsetRange, pieces: int) -> list[OffsetRange]:
    """``r`` in ``pieces`` contiguous ranges whose sizes differ by at most one."""
    step, extra = divmod(r.size, pieces)
    out, begin = [], r.start
    for i in range(pieces):
        stop = begin + step + (1 if i < extra else 0)
        out.append(OffsetRange(r.topic, r.partition, begin, stop))
        begin = stop
    return out


def rate_limited(start: dict[TopicPartition, int], latest: dict[TopicPartition, int],
                 limit: int | None) -> dict[TopicPartition, int]:
    """End offsets of a micro-batch reading at most ``limit`` offsets, shared in proportion to what
    each partition has available (Spark's maxOffsetsPerTrigger)."""
    available = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    total = sum(available.values())
    if limit is None or total <= limit:
        return dict(latest)
    end = {}
    for tp, offset in latest.items():
        begin = start.get(tp, offset)
        end[tp] = begin + int(available[tp] * limit / total)
    return end
