"""The in-flight state of a share-partition's records: one record, the lock it is held under, a
change pending its state write (what it undoes), and what one acquisition took."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .record_state import RecordState, check_transition

if TYPE_CHECKING:
    from ..clock import Timer

S = RecordState


@dataclass(frozen=True)
class Limits:
    """A group's settings as they apply to one acquisition or acknowledgement."""
    lock_ms: int
    delivery_limit: int
    max_in_flight: int
    read_committed: bool = False


@dataclass(eq=False)
class Lock:
    """The acquisition lock of the records one fetch (or one RENEW) gave a member."""
    member_id: str
    offsets: list[int]
    timer: Timer | None = None
    expired: bool = False  # its timer fired (a record put back under it by a rollback is released)


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int
    lock: Lock | None = None
    batch_records: int = 1  # records of the batch it was produced in (redelivery throttling)
    change: Change | None = None  # the change touching it whose write is not done yet

    @property
    def acquirable(self) -> bool:
        return self.state == S.AVAILABLE and self.change is None

    def move(self, target: RecordState) -> None:
        check_transition(self.state, target)
        self.state = target


@dataclass(eq=False)
class Change:
    """A change applied in memory whose state write is pending: each record it touched as it was
    before (offset, record, state, lock, delivery count), to put back if the write fails."""
    limits: Limits
    writes: int  # the share-partition's successful writes when it was applied
    before: list[tuple[int, InFlight, RecordState, Lock | None, int]] = field(default_factory=list)

    def touch(self, offset: int, record: InFlight) -> None:
        self.before.append((offset, record, record.state, record.lock, record.delivery_count))
        record.change = self


@dataclass
class Acquired:
    ranges: list[tuple[int, int, int]] = field(default_factory=list)  # first, last, delivery count
    count: int = 0

    def add(self, offset: int, delivery_count: int) -> None:
        if self.ranges and self.ranges[-1][1] == offset - 1 and self.ranges[-1][2] == delivery_count:
            first, _, count = self.ranges[-1]
            self.ranges[-1] = (first, offset, count)
        else:
            self.ranges.append((offset, offset, delivery_count))
        self.count += 1
