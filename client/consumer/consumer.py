"""The asyncio Consumer: assigned or subscribed partitions, read in the background.

    async with Consumer("orders", bootstrap_servers="127.0.0.1:9092", group_id="billing") as consumer:
        async for record in consumer:
            ...

Defaults are the Java client's, except ``isolation_level`` which is
read_committed here: Weir's users come for transactions. Settings carry the
Java client's names in snake_case. ``group_protocol="consumer"`` joins with
Kafka 4's consumer protocol (KIP-848, ``membership.py``): the broker assigns
(``group_remote_assignor``), and ``subscribe(pattern=...)`` sends a regex for it to resolve.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, TypeVar, Unpack
from collections.abc import AsyncIterator, Callable, Iterable, Mapping

from ..cluster import Cluster
from ..errors import IllegalStateError
from ..types import ConsumerRecord, OffsetAndMetadata, TopicPartition
from .fetcher import EARLIEST, LATEST, READ_COMMITTED, READ_UNCOMMITTED, Fetcher
from .group import GroupMembership, GroupMetadata, RebalanceListener
from .membership import ConsumerGroupMembership
from ..security import ClientSecurity, SecurityOptions

if TYPE_CHECKING:
    import pyarrow as pa

_Taken = TypeVar("_Taken")  # what a drain hands out per partition: a list of records, or a RecordBatch

_ISOLATION = {"read_committed": READ_COMMITTED, "read_uncommitted": READ_UNCOMMITTED}


class Consumer:
    """Reads assigned (``assign()``) or subscribed (``subscribe()``, ``group_id``) partitions.

    ``topics`` subscribes at ``start()``. Settings are the Java consumer's, in snake_case, with its
    defaults, except ``isolation_level`` (read_committed). ``group_protocol="consumer"`` joins with
    KIP-848's protocol (the broker assigns, by ``group_remote_assignor``). An async context manager:
    ``async with Consumer(...)`` starts it and closes it (leaving the group)."""
    def __init__(self, *topics: str, bootstrap_servers: str | list[str] = "127.0.0.1:9092",
                 client_id: str = "weir-python", group_id: str | None = None, group_instance_id: str | None = None,
                 isolation_level: str = "read_committed", auto_offset_reset: str = "latest",
                 enable_auto_commit: bool = True, auto_commit_interval_ms: int = 5000,
                 partition_assignment_strategy: Iterable[str] | None = None,
                 session_timeout_ms: int | None = None, heartbeat_interval_ms: int | None = None,
                 max_poll_interval_ms: int = 300000, fetch_max_wait_ms: int = 500, fetch_min_bytes: int = 1,
                 fetch_max_bytes: int = 52428800, max_partition_fetch_bytes: int = 1048576,
                 request_timeout_ms: int = 30000, retry_backoff_ms: int = 100, retry_backoff_max_ms: int = 1000,
                 rebalance_listener: RebalanceListener | None = None, group_protocol: str = "classic",
                 group_remote_assignor: str | None = None, **security: Unpack[SecurityOptions]):
        if isolation_level not in _ISOLATION:
            raise ValueError("isolation_level is read_committed or read_uncommitted")
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError("auto_offset_reset is earliest, latest or none")
        self.cluster = Cluster(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                               retry_backoff_ms=retry_backoff_ms, retry_backoff_max_ms=retry_backoff_max_ms,
                               security=ClientSecurity.from_options(**security))
        self.fetcher = Fetcher(self.cluster, isolation_level=_ISOLATION[isolation_level],
                               auto_offset_reset=auto_offset_reset, fetch_max_wait_ms=fetch_max_wait_ms,
                               fetch_min_bytes=fetch_min_bytes, fetch_max_bytes=fetch_max_bytes,
                               max_partition_fetch_bytes=max_partition_fetch_bytes, retry_backoff_ms=retry_backoff_ms)
        if group_protocol not in ("classic", "consumer"):
            raise ValueError("group_protocol is classic or consumer")
        # As the Java consumer (ConfigException): each protocol refuses the other's member settings.
        unsupported: dict[str, object] = (
            {"group_remote_assignor": group_remote_assignor} if group_protocol == "classic" else
            {"partition_assignment_strategy": partition_assignment_strategy, "session_timeout_ms": session_timeout_ms,
             "heartbeat_interval_ms": heartbeat_interval_ms})
        for name, value in unsupported.items():
            if value is not None:
                raise ValueError(f"{name} cannot be set when group_protocol={group_protocol}")
        self.group_id = group_id
        # group.protocol=consumer (KIP-848): the broker assigns, and the session timeout and heartbeat
        # interval are the group's settings (group.consumer.*), not the member's.
        self.group: GroupMembership | ConsumerGroupMembership | None = None if group_id is None else (
            ConsumerGroupMembership(
                self.cluster, group_id, group_instance_id=group_instance_id, remote_assignor=group_remote_assignor,
                rebalance_timeout_ms=max_poll_interval_ms, isolation_level=_ISOLATION[isolation_level],
                on_assigned=self._on_assigned, on_revoked=self._on_revoked, on_lost=self._on_lost,
                listener=rebalance_listener)) if group_protocol == "consumer" else GroupMembership(
            self.cluster, group_id, group_instance_id=group_instance_id,
            assignors=list(partition_assignment_strategy or ("range", "cooperative-sticky")),
            session_timeout_ms=45000 if session_timeout_ms is None else session_timeout_ms,
            rebalance_timeout_ms=max_poll_interval_ms,
            heartbeat_interval_ms=3000 if heartbeat_interval_ms is None else heartbeat_interval_ms,
            isolation_level=_ISOLATION[isolation_level], on_assigned=self._on_assigned,
            on_revoked=self._on_revoked, listener=rebalance_listener)
        self.enable_auto_commit = enable_auto_commit and group_id is not None
        self.auto_commit_interval = auto_commit_interval_ms / 1000
        self._subscription: set[str] = set(topics)
        self._manual = False
        self._started = False
        self._closed = False
        self._last_auto_commit = time.monotonic()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Connect, and subscribe to the topics given to the constructor (``async with`` calls this)."""
        if self._started:
            return
        await self.cluster.refresh(sorted(self._subscription) or [], allow_auto_create=False)
        self.fetcher.start()
        self._started = True
        if self._subscription:
            self.subscribe(*self._subscription)

    async def close(self) -> None:
        """Commit (with auto-commit), leave the group, close the connections."""
        if self._closed:
            return
        self._closed = True
        if self._started and self.group is not None:
            if self.enable_auto_commit and self.fetcher.states:
                await self.commit()
            await self.group.close()
        await self.fetcher.close()
        await self.cluster.close()

    async def __aenter__(self) -> Consumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ assignment

    def subscribe(self, *topics: str, pattern: str | None = None) -> None:
        """Join the group for these topics (or, with group_protocol="consumer", for the topics matching
        ``pattern``, a regex the broker resolves: RE2/J, as Kafka's SubscriptionPattern)."""
        if self.group is None:
            raise IllegalStateError("subscribe() needs a group_id; use assign() without one")
        if self._manual:
            raise IllegalStateError("this consumer uses assign(); subscribe() and assign() do not mix")
        if pattern is not None:
            if not isinstance(self.group, ConsumerGroupMembership) or topics:
                raise IllegalStateError("subscribe(pattern=) needs group_protocol='consumer' and no topic names")
            self.group.subscribe_pattern(pattern)
            return
        self._subscription = set(topics)
        if self._started:
            self.group.subscribe(sorted(self._subscription))

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions, with no group membership."""
        if self._subscription and self.group is not None and self.group.subscription:
            raise IllegalStateError("this consumer subscribed; subscribe() and assign() do not mix")
        self._manual = True
        self.fetcher.assign([TopicPartition(*tp) for tp in partitions])

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer reads now (assigned, or given to it by its group)."""
        return set(self.fetcher.states)

    async def _on_assigned(self, partitions: list[TopicPartition]) -> None:
        """A rebalance gave us these partitions: start from their committed offsets."""
        self.fetcher.assign([*self.fetcher.states, *partitions])
        assert self.group is not None  # only the group calls this
        committed = await self.group.fetch_committed(partitions)
        for tp in partitions:
            offset = committed.get(tp)
            if offset is not None:
                self.fetcher.seek(tp, offset.offset)

    async def _on_revoked(self, partitions: list[TopicPartition]) -> None:
        if self.enable_auto_commit:
            await self.commit({tp: offset for tp in partitions if (offset := self._offset_of(tp)) is not None})
        self.fetcher.assign([tp for tp in self.fetcher.states if tp not in set(partitions)])

    async def _on_lost(self, partitions: list[TopicPartition]) -> None:
        """Partitions that may already be another member's: dropped without committing."""
        self.fetcher.assign([tp for tp in self.fetcher.states if tp not in set(partitions)])

    def _offset_of(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        state = self.fetcher.states.get(tp)
        return None if state is None or state.position is None else OffsetAndMetadata(state.position)

    # ------------------------------------------------------------------ positions

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Read ``tp`` from ``offset`` on (the next record returned is at ``offset``)."""
        self.fetcher.seek(TopicPartition(*tp), offset)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Move to the log start offset of ``partitions`` (every assigned partition if none)."""
        await self._seek_to(partitions, EARLIEST)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Move to the end of ``partitions`` (every assigned partition if none): the last stable
        offset under read_committed, the high watermark otherwise."""
        await self._seek_to(partitions, LATEST)

    async def _seek_to(self, partitions: Iterable[TopicPartition], spec: int) -> None:
        targets = [TopicPartition(*tp) for tp in partitions] or list(self.fetcher.states)
        for tp, (offset, _ts) in (await self.fetcher.list_offsets({tp: spec for tp in targets})).items():
            self.fetcher.seek(tp, offset)

    async def position(self, tp: TopicPartition) -> int:
        """Offset of the next record this consumer will return for ``tp``."""
        state = self.fetcher._state(TopicPartition(*tp))
        if state.fetch_position is None:
            await self.fetcher.reset_positions([TopicPartition(*tp)])
        position = state.position
        assert position is not None  # reset_positions set it, or raised
        return position

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching ``partitions`` until ``resume()``; their positions are kept."""
        for tp in partitions:
            self.fetcher._state(TopicPartition(*tp)).paused = True

    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch paused ``partitions`` again."""
        for tp in partitions:
            self.fetcher._state(TopicPartition(*tp)).paused = False
        self.fetcher.wake()

    def paused(self) -> set[TopicPartition]:
        """The partitions paused now."""
        return {tp for tp, state in self.fetcher.states.items() if state.paused}

    async def offsets_for_times(self, timestamps: dict[TopicPartition, int]
                                ) -> dict[TopicPartition, tuple[int, int] | None]:
        """{tp: (offset, timestamp)} of the first record at or after each timestamp, or None."""
        found = await self.fetcher.list_offsets({TopicPartition(*tp): ts for tp, ts in timestamps.items()})
        return {tp: (None if offset < 0 else found[tp]) for tp, (offset, _ts) in found.items()}

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The log start offset of each partition."""
        found = await self.fetcher.list_offsets({TopicPartition(*tp): EARLIEST for tp in partitions})
        return {tp: offset for tp, (offset, _ts) in found.items()}

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """High watermarks, or last stable offsets under read_committed."""
        found = await self.fetcher.list_offsets({TopicPartition(*tp): LATEST for tp in partitions})
        return {tp: offset for tp, (offset, _ts) in found.items()}

    # ------------------------------------------------------------------ committing

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None) -> None:
        """Commit ``offsets`` (default: the current positions of every assigned partition)."""
        if self.group is None:
            raise IllegalStateError("commit() needs a group_id")
        if offsets is None:
            offsets = {tp: offset for tp in self.fetcher.states if (offset := self._offset_of(tp)) is not None}
        normalised = {TopicPartition(*tp): (o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o))
                      for tp, o in offsets.items()}
        await self.group.commit(normalised)
        self._last_auto_commit = time.monotonic()

    async def committed(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        """The group's committed offset of ``tp``, or None (needs a ``group_id``)."""
        if self.group is None:
            raise IllegalStateError("committed() needs a group_id")
        return (await self.group.fetch_committed([TopicPartition(*tp)])).get(TopicPartition(*tp))

    def group_metadata(self) -> GroupMetadata:
        """What ``Producer.send_offsets_to_transaction`` needs to fence zombies (KIP-447)."""
        if self.group is None:
            raise IllegalStateError("group_metadata() needs a group_id")
        return self.group.metadata()

    # ------------------------------------------------------------------ reading

    async def getmany(self, *partitions: TopicPartition, timeout_ms: int = 0,
                      max_records: int = 500) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records fetched so far, waiting up to ``timeout_ms`` for some to arrive."""
        return await self._get(self.fetcher.drain, partitions, timeout_ms, max_records)

    async def getmany_arrow(self, *partitions: TopicPartition, timeout_ms: int = 0,
                            max_records: int = 500) -> dict[TopicPartition, pa.RecordBatch]:
        """``getmany`` as columns: one ``pyarrow.RecordBatch`` a partition, with columns ``key`` and
        ``value`` (binary), ``offset`` (int64), ``timestamp`` (timestamp[ms, UTC]), ``timestamp_type``
        (int8: 0 CreateTime, 1 LogAppendTime) and ``headers`` (list<struct<key: string, value: binary>>),
        built in C from the fetched record batches with no Python object per record
        (protocol/record_arrow.py). The same records as ``getmany``: read_committed leaves out aborted
        transactions, control records are never shown, and the position moves past what is returned.
        The mirror of ``Producer.send_arrow``. Needs pyarrow (the ``arrow`` extra)."""
        return await self._get(self.fetcher.drain_arrow, partitions, timeout_ms, max_records)

    async def _get(self, drain: Callable[[int, set[TopicPartition] | None], dict[TopicPartition, _Taken]],
                   partitions: tuple[TopicPartition, ...], timeout_ms: int,
                   max_records: int) -> dict[TopicPartition, _Taken]:
        if not self._started:
            raise IllegalStateError("the consumer is not started")
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if self.group is not None and self.group.subscription:
                await self.group.ensure_active()
            await self._ensure_positions()
            await self._maybe_auto_commit()
            records = drain(max_records, {TopicPartition(*tp) for tp in partitions} or None)
            remaining = deadline - time.monotonic()
            if records or remaining <= 0:
                return records
            self.fetcher.records_ready.clear()
            waiters = [self.fetcher.records_ready.wait()]
            if self.group is not None:
                waiters.append(self.group.rejoin_needed.wait())
            tasks = [asyncio.ensure_future(w) for w in waiters]
            try:
                await asyncio.wait(tasks, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()

    async def getone(self) -> ConsumerRecord:
        """The next record, waiting as long as it takes."""
        while True:
            for batch in (await self.getmany(timeout_ms=1000, max_records=1)).values():
                return batch[0]

    async def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        while not self._closed:
            for batch in (await self.getmany(timeout_ms=1000)).values():
                for record in batch:
                    yield record

    async def _ensure_positions(self) -> None:
        missing = [tp for tp, state in self.fetcher.states.items() if state.fetch_position is None]
        if missing:
            await self.fetcher.reset_positions(missing)

    async def _maybe_auto_commit(self) -> None:
        if self.enable_auto_commit and time.monotonic() - self._last_auto_commit >= self.auto_commit_interval:
            await self.commit()
