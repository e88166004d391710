"""Positions of the assigned partitions and the fetches that move them.

One background task keeps at most one Fetch in flight per broker. An answer is
kept as raw batches (a ``CompletedFetch``, decoded when the application drains
it, as the Java client's ``CompletedFetch`` is) and the partition's fetch
position moves past it at once, so the next Fetch goes out while the
application still works through the previous one.

Prefetch bound (the Java client fetches a partition only once its buffer is
empty; we go one answer further so fetching overlaps processing): a partition
is fetched again while at most one completed fetch of it waits, and nothing is
fetched while the undelivered answers hold ``fetch_max_bytes`` or more. Memory
thus stays within about two ``max_partition_fetch_bytes`` per partition and
``fetch_max_bytes`` plus one answer overall.

A seek or a reassignment while a fetch is in flight makes its answer stale:
records are kept only if the position they were fetched from is still the
partition's fetch position, as in the Java client.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Collection, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import fetch, list_offsets
from weir.protocol.record_arrow import Columns, RecordColumns

from ..cluster import Cluster
from ..errors import BrokerResponseError, KafkaException, OffsetOutOfRangeError, error_instance, raise_for
from ..types import ConsumerRecord, TopicPartition
from .fetched import CompletedFetch, next_fetch_position

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

EARLIEST, LATEST = -2, -1
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


__all__ = ["EARLIEST", "Fetcher", "LATEST", "OffsetOutOfRangeError", "READ_COMMITTED", "READ_UNCOMMITTED"]


@dataclass(slots=True)
class PartitionState:
    fetch_position: int | None = None  # where the next fetch starts; None until known
    paused: bool = False
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    buffered: deque[CompletedFetch] = field(default_factory=deque)  # answers not yet fully delivered
    error: BaseException | None = None

    @property
    def position(self) -> int | None:
        """Offset of the next record the application gets (Java's ``position()``)."""
        return self.buffered[0].position if self.buffered else self.fetch_position


class Fetcher:
    def __init__(self, cluster: Cluster, *, isolation_level: int, auto_offset_reset: str, fetch_max_wait_ms: int,
                 fetch_min_bytes: int, fetch_max_bytes: int, max_partition_fetch_bytes: int,
                 retry_backoff_ms: int) -> None:
        self.cluster = cluster
        self.isolation_level = isolation_level
        self.auto_offset_reset = auto_offset_reset
        self.max_wait_ms = fetch_max_wait_ms
        self.min_bytes = fetch_min_bytes
        self.max_bytes = fetch_max_bytes
        self.partition_max_bytes = max_partition_fetch_bytes
        self.retry_backoff = retry_backoff_ms / 1000
        self.states: dict[TopicPartition, PartitionState] = {}
        self.records_ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._in_flight: set[int] = set()  # broker ids with a Fetch outstanding
        self.buffered_bytes = 0  # bytes of the completed fetches not yet fully delivered
        self._held_since: dict[int, float] = {}  # broker id -> when its caught-up fetch was first held back
        self._task: asyncio.Task[None] | None = None
        # Fetches and resets in flight: held here because the loop keeps only weak references to
        # tasks, and cancelled by close() so none outlives the consumer.
        self._side_tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ assignment and positions

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        wanted = set(partitions)
        for tp in list(self.states):
            if tp not in wanted:
                self._discard_buffer(self.states.pop(tp))
        for tp in wanted:
            self.states.setdefault(tp, PartitionState())
        self._wake.set()

    def seek(self, tp: TopicPartition, offset: int) -> None:
        state = self._state(tp)
        state.fetch_position = offset
        self._discard_buffer(state)
        state.error = None
        self._wake.set()

    def forget_position(self, tp: TopicPartition) -> None:
        """Drop what was fetched and the position: auto_offset_reset decides again on the next fetch."""
        state = self._state(tp)
        state.fetch_position = None
        self._discard_buffer(state)
        state.error = None
        self._wake.set()

    def _discard_buffer(self, state: PartitionState) -> None:
        for completed in state.buffered:
            self.buffered_bytes -= completed.size
        state.buffered.clear()

    def _state(self, tp: TopicPartition) -> PartitionState:
        state = self.states.get(tp)
        if state is None:
            raise KafkaException(f"{tp} is not assigned to this consumer")
        return state

    async def list_offsets(self, timestamps: dict[TopicPartition, int]) -> dict[TopicPartition, tuple[int, int]]:
        """ListOffsets per leader: {tp: (offset, timestamp)}; -1 offsets where none is found.

        A retriable answer for a partition (a topic just created, a leader moving, OFFSET_NOT_AVAILABLE
        while a new leader learns its high watermark: Apache Kafka gives each) is asked again by the
        call path after a metadata refresh, as the Java consumer does, until the request timeout has
        passed (then KafkaTimeoutError with the last such error); any other error is raised."""
        deadline = self.cluster.deadline()
        for topic in sorted({tp.topic for tp in timestamps}):
            await self.cluster.partitions_for(topic, deadline=deadline)

        def build(_v: int, partitions: list[TopicPartition]) -> Any:
            topics: dict[str, list[Any]] = {}
            for tp in partitions:
                topics.setdefault(tp.topic, []).append(
                    list_offsets.RequestPartition(partition_index=tp.partition, timestamp=timestamps[tp]))
            return list_offsets.REQUEST(replica_id=-1, isolation_level=self.isolation_level, topics=[
                list_offsets.RequestTopic(name=name, partitions=parts) for name, parts in topics.items()])
        answers = await self.cluster.call_leaders(timestamps, ApiKey.LIST_OFFSETS, build, lambda response: (
            (TopicPartition(t.name, p.partition_index), p.error_code, p)
            for t in response.topics for p in t.partitions), deadline=deadline)
        found: dict[TopicPartition, tuple[int, int]] = {}
        for tp, answer in answers.items():
            raise_for(answer.error_code, f"ListOffsets {tp.topic}-{tp.partition}", request=ApiKey.LIST_OFFSETS)
            found[tp] = (answer.offset, answer.timestamp)
        return found

    async def reset_positions(self, partitions: Collection[TopicPartition]) -> None:
        """Positions by auto_offset_reset for partitions that have none."""
        if not partitions:
            return
        if self.auto_offset_reset not in ("earliest", "latest"):
            raise OffsetOutOfRangeError(f"no committed offset for {sorted(partitions)} and auto_offset_reset=none")
        spec = EARLIEST if self.auto_offset_reset == "earliest" else LATEST
        for tp, (offset, _ts) in (await self.list_offsets({tp: spec for tp in partitions})).items():
            state = self.states.get(tp)
            if state is not None and state.fetch_position is None:
                state.fetch_position = offset
        self._wake.set()

    # ------------------------------------------------------------------ the fetch loop

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        tasks = [*self._side_tasks, *([self._task] if self._task is not None else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    def wake(self) -> None:
        self._wake.set()

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            needs_metadata = False
            # Positions are read here, not in the fetch task: it starts later, when a rebalance may have
            # revoked some of these partitions.
            by_node: dict[int, dict[TopicPartition, int]] = {}
            held_back: set[int] = set()  # brokers leading a partition that waits on the prefetch bound
            full = self.buffered_bytes >= self.max_bytes
            for tp, state in self.states.items():
                position = state.fetch_position
                if position is None or state.paused or state.error:
                    continue
                leader = self.cluster.leader(*tp)
                if full or len(state.buffered) > 1:
                    held_back.add(leader)
                elif leader < 0:
                    needs_metadata = True
                elif leader not in self._in_flight:
                    by_node.setdefault(leader, {})[tp] = position
            for node, partitions in by_node.items():
                if node in held_back and all(self._caught_up(self.states[tp]) for tp in partitions) \
                        and self._hold(node):
                    # A Fetch of caught-up partitions alone would wait fetch_max_wait_ms at the broker,
                    # and the held-back ones could not be fetched meanwhile: they go together once the
                    # application drains those, or after fetch_max_wait_ms at the latest.
                    continue
                self._held_since.pop(node, None)
                self._in_flight.add(node)
                self._spawn(self._fetch(node, partitions))
            if needs_metadata:
                await self._refresh([tp.topic for tp in self.states])
            await self._wake.wait()

    def _hold(self, node: int) -> bool:
        """Hold a broker's caught-up fetch back, for at most fetch_max_wait_ms."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        since = self._held_since.get(node)
        if since is None:
            self._held_since[node] = now
            loop.call_later(self.max_wait_ms / 1000, self._wake.set)
            return True
        return now - since < self.max_wait_ms / 1000

    def _caught_up(self, state: PartitionState) -> bool:
        """Was the partition at the end of what it may read (the LSO under read_committed) at its last answer?"""
        end = state.last_stable_offset if self.isolation_level == READ_COMMITTED and state.last_stable_offset >= 0 \
            else state.high_watermark
        return state.fetch_position is not None and 0 <= end <= state.fetch_position

    async def _refresh(self, topics: Iterable[str]) -> None:
        try:
            await self.cluster.refresh(sorted(set(topics)), allow_auto_create=False)
        except KafkaException as exc:
            log.debug("metadata refresh failed: %s", exc)
        await asyncio.sleep(self.retry_backoff)  # retry.backoff.ms between attempts
        self._wake.set()

    async def _fetch(self, node: int, offsets: dict[TopicPartition, int]) -> None:
        topics: dict[str, list[Any]] = {}
        for tp, offset in offsets.items():
            topics.setdefault(tp.topic, []).append(fetch.FetchPartition(
                partition=tp.partition, fetch_offset=offset, partition_max_bytes=self.partition_max_bytes))
        try:
            response = await self.cluster.send(node, ApiKey.FETCH, lambda _v: fetch.REQUEST(
                max_wait_ms=self.max_wait_ms, min_bytes=self.min_bytes, max_bytes=self.max_bytes,
                isolation_level=self.isolation_level, session_id=0, session_epoch=-1,
                topics=[fetch.FetchTopic(topic=name, partitions=parts) for name, parts in topics.items()]))
            raise_for(response.error_code, "Fetch", request=ApiKey.FETCH)
            for topic in response.responses:
                for answer in topic.partitions:
                    tp = TopicPartition(topic.topic, answer.partition_index)
                    fetched_from = offsets.get(tp)
                    if fetched_from is not None:
                        self._accept(tp, fetched_from, answer)
        except KafkaException as exc:
            log.debug("fetch from broker %d failed: %s", node, exc)
            if not isinstance(exc, BrokerResponseError) or exc.retriable:
                await self._refresh([tp.topic for tp in offsets])
        finally:
            self._in_flight.discard(node)
            self._wake.set()

    def _accept(self, tp: TopicPartition, fetched_from: int, answer: Any) -> None:
        state = self.states.get(tp)
        if state is None or state.fetch_position != fetched_from:
            return  # seeked or reassigned meanwhile: this answer is stale
        code = answer.error_code
        if code == Errors.OFFSET_OUT_OF_RANGE:
            if self.auto_offset_reset in ("earliest", "latest"):
                state.fetch_position = None
                self._spawn(self._reset_after_out_of_range(tp))
            else:
                state.error = OffsetOutOfRangeError(f"offset {fetched_from} is out of range for {tp}")
                self.records_ready.set()
            return
        if code:
            error = error_instance(code, f"Fetch {tp}", request=ApiKey.FETCH)
            if error.retriable:  # a leader moved, a topic is new: the next fetch follows fresh metadata
                self.cluster.forget_leader(tp.topic, tp.partition)
            else:
                state.error = error
                self.records_ready.set()
            return
        state.high_watermark = answer.high_watermark
        state.last_stable_offset = answer.last_stable_offset
        state.log_start_offset = answer.log_start_offset
        if not answer.records:
            return
        # Only the batch headers are read now (to move the position); records are decoded on drain.
        next_position = next_fetch_position(answer.records, fetched_from)
        if next_position == fetched_from:
            return
        state.fetch_position = next_position
        completed = CompletedFetch(tp, answer.records, fetched_from, next_position, answer.aborted_transactions,
                                   self.isolation_level == READ_COMMITTED)
        state.buffered.append(completed)
        self.buffered_bytes += completed.size
        self.records_ready.set()

    async def _reset_after_out_of_range(self, tp: TopicPartition) -> None:
        try:
            await self.reset_positions([tp])
        except KafkaException as exc:
            state = self.states.get(tp)
            if state is not None:
                state.error = exc
                self.records_ready.set()

    # ------------------------------------------------------------------ draining

    def drain(self, max_records: int, only: set[TopicPartition] | None = None,
              ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Take up to ``max_records`` buffered records (of ``only``'s partitions when given);
        raises a partition's fetch error first."""
        out: dict[TopicPartition, list[ConsumerRecord]] = {}

        def take(tp: TopicPartition, completed: CompletedFetch, room: int) -> int:
            chunk = completed.take(room)  # may raise a decode error (CRC, ...)
            if chunk:
                if tp in out:
                    out[tp].extend(chunk)
                else:
                    out[tp] = chunk
            return len(chunk)

        self._drain(max_records, only, take)
        return out

    def drain_arrow(self, max_records: int, only: set[TopicPartition] | None = None,
                    ) -> dict[TopicPartition, pa.RecordBatch]:
        """``drain`` as one Arrow record batch per partition (protocol/record_arrow.py), built from the
        answers' bytes in C."""
        columns: dict[TopicPartition, Columns] = {}

        def take(tp: TopicPartition, completed: CompletedFetch, room: int) -> int:
            held = columns.get(tp)
            if held is None:
                held = columns[tp] = RecordColumns()
            before = held.rows
            completed.take_arrow(held, before + room)  # may raise a decode error (CRC, ...)
            return held.rows - before

        self._drain(max_records, only, take)
        return {tp: held.record_batch() for tp, held in columns.items() if held.rows}

    def _drain(self, max_records: int, only: set[TopicPartition] | None,
               take: Callable[[TopicPartition, CompletedFetch, int], int]) -> None:
        """Hand out up to ``max_records`` through ``take`` (partition, answer, room: how many it took)."""
        taken = 0
        freed = False
        for tp, state in self.states.items():
            if only is not None and tp not in only:
                continue
            if state.error is not None:
                error, state.error = state.error, None
                raise error
            if state.paused:
                continue
            buffered = state.buffered
            while buffered and taken < max_records:
                completed = buffered[0]
                taken += take(tp, completed, max_records - taken)
                if completed.exhausted:
                    buffered.popleft()
                    self.buffered_bytes -= completed.size
                    freed = True
                else:
                    break  # max_records reached inside this answer
        if not any(state.buffered for state in self.states.values()):
            self.records_ready.clear()
        if taken or freed:
            self._wake.set()
