"""One share-partition: the records of one topic-partition as one share group consumes them.

Kafka's ``SharePartition``, kept per record: offsets below ``start_offset`` are done; offsets from
``end_offset`` on were never acquired; between the two, ``in_flight`` holds every record not yet
done, in offset order (offsets only ever enter at the end, so the dict's order is offset order,
and its first key is the next start offset). A record is done when ACKNOWLEDGED or ARCHIVED and
then leaves ``in_flight``; an offset between the two ends that is not in ``in_flight`` is done.

Records are acquired by a member under one acquisition lock per fetch (a timer on the injected
clock); when it fires, what the member still holds goes back to AVAILABLE, or to ARCHIVED once
its delivery count reached the group's delivery limit, as Kafka releases it. The in-flight limit
(``share.partition.max.record.locks``) bounds ``end_offset - start_offset`` for new acquisitions;
records released inside that window are acquired again first. With ``share.isolation.level``
read_committed, acquisition stops at the last stable offset and the records of aborted
transactions are archived unseen, as a read_committed consumer never shows them.

A change made by an acknowledgement or a leaving member is applied at once but stays pending
(``Change``) until its state is written: ``commit`` then moves the start offset past what it
finished, ``rollback`` (the write failed) puts every record it touched back as it was (state,
holder, lock, delivery count), as Kafka's ``rollbackOrProcessStateUpdates`` does, so the records
stay with their member until their lock expires and are delivered again. A pending record is not
acquired, acknowledged, released or expired by anything else meanwhile (Kafka's "ongoing state
transition"). A lock expiry is not pending: as in Kafka it stands even when its write fails.

Deviation: Kafka keeps in-flight state per batch until a batch is split by acknowledgements;
per record is the same state, simpler, and bounded by the in-flight limit (at most 10,000).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from weir.protocol.errors import Errors, KafkaError
from weir.protocol.records import BatchHeader, iter_headers

from ..log import partition_txns
from ..log.txn_index import AbortedTxn

from .in_flight import Acquired, Change, InFlight, Limits, Lock
from .record_state import TERMINAL, AcknowledgeType, RecordState
from .records import StoredState, ranges

if TYPE_CHECKING:
    from ..clock import Clock
    from ..log.partition import Partition

S = RecordState
NOT_ACQUIRED = "The offset cannot be acknowledged. The offset is not acquired."  # Kafka 4.4's words
NOT_OWNER = "Member is not the owner of batch record"
_READ_BYTES = 1 << 20  # one log read while walking batch headers


class SharePartition:
    def __init__(self, key: tuple[str, bytes, int], log_partition: Partition, start_offset: int, clock: Clock,
                 on_available: Callable[[], None] = lambda: None):
        self.key = key  # group id, topic id, partition
        self.log = log_partition
        self.clock = clock
        self.start_offset = start_offset
        # The start offset DescribeShareGroupOffsets reports: Kafka 4.4 writes a change's state with the
        # start offset from before that change moved it (SharePartition advances its cached start only
        # once the write is done), so it reports the start one change behind: 0 after a first
        # acknowledgement finished offsets 0-2. Weir stores the moved start; only the report lags.
        self.reported_start = start_offset
        self.end_offset = start_offset
        self.in_flight: dict[int, InFlight] = {}
        self.on_available = on_available  # wakes share fetches waiting for records
        self.on_change: Callable[[], None] = lambda: None  # a change to store that nobody waits for
        self.stored = False  # whether __share_group_state holds this state (the manager's to say)
        self.writes = 0  # successful state writes (the manager counts them)
        self.created_ms = clock.now_ms()

    # ------------------------------------------------------------------ acquisition

    def acquire(self, member_id: str, max_records: int, limits: Limits, *, strict: bool,
                max_bytes: int = 0x7FFFFFFF) -> Acquired:
        """Acquire up to ``max_records`` for ``member_id``: released records first, then new ones.
        ``strict`` (record-limit mode) cuts inside a batch; otherwise whole batches are taken
        while the limit is not reached (Kafka's batch-optimized mode). New records are taken from
        at most ``max_bytes`` of log, but at least one batch (Kafka acquires within what its
        fetch read)."""
        self._follow_log_start()
        acquired = Acquired()
        lock = Lock(member_id, [])
        throttled = self._acquire_released(max_records, limits, lock, acquired)
        room = min(max_records - acquired.count, limits.max_in_flight - (self.end_offset - self.start_offset))
        if room > 0 and not throttled:
            self._acquire_new(room, limits, lock, acquired, strict, max_bytes)
        if lock.offsets:
            lock.timer = self.clock.call_later(limits.lock_ms / 1000, lambda: self._expire(lock, limits))
        return acquired

    def _acquire_released(self, max_records: int, limits: Limits, lock: Lock, acquired: Acquired) -> bool:
        """Records delivered before, as Kafka 4.4 throttles them (KAFKA-17541): from a delivery
        count of half the limit (at least 2) on, a fetch takes only half of the record's batch,
        halved again at each further delivery (at least one record); a record on its last
        delivery goes alone. True when throttling ended the fetch (no new records then).
        Simplified: the batch is the one the record was produced in (Kafka's in-flight batch
        may span several), and after a restart it is the record alone."""
        limit = limits.delivery_limit
        throttle_from = max(2, -(-limit // 2))
        cap: int | None = None
        for offset, record in self.in_flight.items():
            if acquired.count >= max_records:
                return False
            if not record.acquirable:
                continue
            count = record.delivery_count
            if limit > 2 and count == limit - 1 and acquired.count:
                return True  # on its last delivery: alone, in the next fetch
            if count >= throttle_from and cap is None:
                cap = max(1, record.batch_records >> (count - throttle_from + 1))
            self._take(offset, record, lock, acquired)
            if (limit > 2 and record.delivery_count == limit) or (cap is not None and acquired.count >= cap):
                return True
        return False

    def _take(self, offset: int, record: InFlight, lock: Lock, acquired: Acquired) -> None:
        record.move(S.ACQUIRED)
        record.delivery_count += 1
        record.lock = lock
        lock.offsets.append(offset)
        acquired.add(offset, record.delivery_count)

    def _acquire_new(self, room: int, limits: Limits, lock: Lock, acquired: Acquired, strict: bool,
                     max_bytes: int) -> None:
        bound = self._bound(limits)
        taken = read = 0
        while self.end_offset < bound and taken < room:
            data = self.log.read(self.end_offset, _READ_BYTES, bound, min_one=True).records
            headers = list(iter_headers(data))  # type: ignore[arg-type]  # bytes, not by reference
            if not headers:
                return
            aborted = (partition_txns.aborted_between(self.log, self.end_offset, headers[-1][1].last_offset + 1)
                       if limits.read_committed else [])
            for _, header in headers:
                if header.last_offset < self.end_offset:
                    continue
                if header.is_control or (aborted and _is_aborted(header, aborted)):
                    self._skip(header.base_offset, header.last_offset)
                    continue
                if read and read + header.size > max_bytes:
                    return
                read += header.size
                for offset in range(max(header.base_offset, self.end_offset), header.last_offset + 1):
                    if strict and taken >= room:
                        return
                    size = header.last_offset - header.base_offset + 1
                    record = self.in_flight[offset] = InFlight(S.AVAILABLE, 0, batch_records=size)
                    self._take(offset, record, lock, acquired)
                    self.end_offset = offset + 1
                    taken += 1
                self.end_offset = header.last_offset + 1
                if taken >= room:
                    return

    def _bound(self, limits: Limits) -> int:
        return self.log.last_stable_offset if limits.read_committed else self.log.high_watermark

    def available_bytes(self, limits: Limits, enough: int) -> int:
        """Bytes of log from the first record a fetch could acquire (a released one, else the next
        new one) to the high watermark (LSO for read_committed), counted up to about ``enough``:
        what a fetch's ``min_bytes`` is held against, as Kafka's delayed share fetch does."""
        bound = self._bound(limits)
        first = next((o for o, r in self.in_flight.items() if r.acquirable), self.end_offset)
        if first >= bound or first < self.log.log_start_offset:
            return 0
        return len(self.log.read(first, enough, bound, min_one=True).records)  # type: ignore[arg-type]

    def _skip(self, first: int, last: int) -> None:
        """Offsets no member is given (control batches, aborted records): ARCHIVED as they are passed."""
        if not self.in_flight:
            self.start_offset = self.end_offset = last + 1
            return
        for offset in range(max(first, self.end_offset), last + 1):
            self.in_flight[offset] = InFlight(S.ARCHIVED, 0)
        self.end_offset = last + 1

    def _follow_log_start(self) -> None:
        """Records deleted from the log (retention, DeleteRecords) are done: the start follows."""
        log_start = self.log.log_start_offset
        if self.start_offset >= log_start:
            return
        for offset in [o for o in self.in_flight if o < log_start]:
            del self.in_flight[offset]  # a lock still naming it finds it gone when it expires
        self.end_offset = max(self.end_offset, log_start)
        self._advance_start()

    # ------------------------------------------------------------------ acknowledgement

    def acknowledge(self, member_id: str, batches: list[tuple[int, int, list[int]]], limits: Limits) -> Change | None:
        """Apply (first, last, types) batches in order, all or none: every offset from the start offset
        on must be ACQUIRED by ``member_id`` (INVALID_RECORD_STATE otherwise, as Kafka refuses and
        rolls back; so an offset acknowledged twice in one request fails); offsets below the start
        offset are done and ignored, as Kafka 4.4 answers them. The change, pending until its write
        is done (``commit``) or failed (``rollback``); None when nothing changed."""
        changes: list[tuple[int, InFlight, AcknowledgeType]] = []
        acknowledged: set[int] = set()
        for first, last, types in batches:
            for offset in range(max(first, self.start_offset), last + 1):  # below the start: done, ignored
                record = self.in_flight.get(offset)
                if record is None or record.state != S.ACQUIRED or record.lock is None or record.change:
                    raise KafkaError(Errors.INVALID_RECORD_STATE, NOT_ACQUIRED)
                if record.lock.member_id != member_id:
                    raise KafkaError(Errors.INVALID_RECORD_STATE, NOT_OWNER)
                if offset in acknowledged:  # overlapping batches: the second finds it acknowledged
                    raise KafkaError(Errors.INVALID_RECORD_STATE, NOT_ACQUIRED)
                acknowledged.add(offset)
                kind = AcknowledgeType(types[0] if len(types) == 1 else types[offset - first])
                changes.append((offset, record, kind))
        if not changes:
            return None
        change = Change(limits, self.writes)
        renewed = Lock(member_id, [])
        for offset, record, kind in changes:
            change.touch(offset, record)
            if kind == AcknowledgeType.RENEW:
                record.move(S.ACQUIRED)
                record.lock = renewed
                renewed.offsets.append(offset)
                continue
            if kind == AcknowledgeType.ACCEPT:
                record.move(S.ACKNOWLEDGED)
            elif kind == AcknowledgeType.RELEASE:
                self._release(record, limits)
            else:  # REJECT, GAP
                record.move(S.ARCHIVED)
            record.lock = None
        if renewed.offsets:
            renewed.timer = self.clock.call_later(limits.lock_ms / 1000, lambda: self._expire(renewed, limits))
        return change

    def commit(self, change: Change) -> None:
        """The change's state is written: it stands, and the start moves past what it finished."""
        self._settle(change, undo=False)

    def rollback(self, change: Change) -> None:
        """The change's write failed: its records are as they were before it (a lock that expired
        meanwhile releases them now). A write since that carried the change is written over."""
        self._settle(change, undo=True)
        if self.writes != change.writes:
            self.on_change()

    def _settle(self, change: Change, undo: bool) -> None:
        released = False
        for offset, record, state, lock, count in change.before:
            if self.in_flight.get(offset) is not record or record.change is not change:
                continue  # gone with the log's start meanwhile
            record.change = None
            if undo:
                record.state, record.lock, record.delivery_count = state, lock, count
            if record.state == S.ACQUIRED and record.lock is not None and record.lock.expired:
                self._release(record, change.limits)
            released |= record.state == S.AVAILABLE
        if self._advance_start() or released:
            # records back, or room in the in-flight window: waiting fetches try again (Kafka
            # completes its delayed share fetches when a written change moved its cached state)
            self.on_available()

    def _release(self, record: InFlight, limits: Limits) -> RecordState:
        """Back to AVAILABLE, or ARCHIVED once the delivery limit is reached (Kafka's rule)."""
        record.move(S.ARCHIVED if record.delivery_count >= limits.delivery_limit else S.AVAILABLE)
        record.lock = None
        return record.state

    def release_member(self, member_id: str, limits: Limits) -> Change | None:
        """A member that left (or whose share session closed) gives back what it holds: the change,
        pending its write as an acknowledgement's is (None: it held nothing)."""
        change = Change(limits, self.writes)
        for offset, record in self.in_flight.items():
            if (record.state == S.ACQUIRED and record.change is None and record.lock is not None
                    and record.lock.member_id == member_id):
                change.touch(offset, record)
                self._release(record, limits)
        return change if change.before else None

    def _expire(self, lock: Lock, limits: Limits) -> None:
        lock.expired = True
        released = False
        for offset in lock.offsets:
            record = self.in_flight.get(offset)
            if record is not None and record.lock is lock and record.state == S.ACQUIRED and record.change is None:
                released |= self._release(record, limits) == S.AVAILABLE
        if self._advance_start() or released:
            self.on_available()
        self.on_change()

    def _advance_start(self) -> bool:
        """The start moves past the done records at the front of the window (each change that is
        stored ends here; the start it had is what Kafka would report for it). Whether it moved."""
        self.reported_start = self.start_offset
        self.start_offset = self.end_offset
        while self.in_flight:
            offset, record = next(iter(self.in_flight.items()))
            if record.state not in TERMINAL or record.change is not None:
                self.start_offset = offset
                break
            del self.in_flight[offset]
        return self.start_offset != self.reported_start

    # ------------------------------------------------------------------ durable state

    def stored_state(self) -> StoredState:
        """What ``__share_group_state`` keeps: the start offset and the window's records in ranges.
        An ACQUIRED record is stored AVAILABLE with its delivery count: after a restart it is
        delivered again, that delivery counted. Pending changes are written as made (the write is
        theirs); the start is past the finished records at the front."""
        start = next((o for o, r in self.in_flight.items() if r.state not in TERMINAL), self.end_offset)
        return StoredState(start, ranges([
            (offset, (int(S.AVAILABLE if r.state == S.ACQUIRED else r.state), r.delivery_count))
            for offset, r in self.in_flight.items() if offset >= start]), create_timestamp=self.created_ms)

    def restore(self, stored: StoredState) -> None:
        """The state a start-up found stored (before any member fetched)."""
        self.start_offset = self.end_offset = stored.start_offset
        self.created_ms = stored.create_timestamp
        for first, last, state, count in stored.batches:
            for offset in range(max(first, stored.start_offset), last + 1):
                self.in_flight[offset] = InFlight(RecordState(state), count)
            self.end_offset = max(self.end_offset, last + 1)
        self._advance_start()

    # ------------------------------------------------------------------ reading

    @property
    def has_available(self) -> bool:
        if any(r.acquirable for r in self.in_flight.values()):
            return True
        return self.end_offset < self.log.high_watermark

    def records_for(self, acquired: Acquired, limits: Limits) -> bytes:
        """The stored batches holding the acquired offsets, each once, in offset order."""
        bound = self.log.last_stable_offset if limits.read_committed else self.log.high_watermark
        batches: dict[int, bytes] = {}
        for first, last, _ in acquired.ranges:
            offset = first
            while offset <= last:
                data = self.log.read(offset, _READ_BYTES, bound, min_one=True).records
                view = memoryview(data)  # type: ignore[arg-type]
                found = False
                for position, header in iter_headers(data):  # type: ignore[arg-type]
                    if header.last_offset < offset:
                        continue
                    found = True
                    batches.setdefault(header.base_offset, bytes(view[position:position + header.size]))
                    offset = header.last_offset + 1
                    if offset > last:
                        break
                if not found:
                    break
        return b"".join(batches[base] for base in sorted(batches))


def _is_aborted(header: BatchHeader, aborted: list[AbortedTxn]) -> bool:
    """A transactional batch of a transaction that was aborted (read_committed never delivers it)."""
    return header.is_transactional and any(
        txn.producer_id == header.producer_id and txn.first_offset <= header.base_offset <= txn.last_offset
        for txn in aborted)


def split_ranges(ranges: list[tuple[int, int, int]], records: bytes, batch_size: int) -> list[tuple[int, int, int]]:
    """Acquired ranges as Kafka answers them: cut at batch boundaries (``records`` holds the
    batches), each piece at least ``batch_size`` records (a ShareFetch's batch_size) unless its
    range ends first; 0 or less: not cut."""
    if batch_size <= 0:
        return ranges
    ends = sorted(header.last_offset for _, header in iter_headers(records))  # type: ignore[arg-type]
    pieces: list[tuple[int, int, int]] = []
    for first, last, count in ranges:
        start = first
        for end in ends:
            if end < start:
                continue
            if end >= last:
                break
            if end - start + 1 >= batch_size:
                pieces.append((start, end, count))
                start = end + 1
        pieces.append((start, last, count))
    return pieces
