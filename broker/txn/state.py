"""Transaction states, their legal transitions, and one transactional id's metadata.

The state ids are the ones Kafka stores in ``__transaction_state``
(PROTOCOL.md 4.4). ``TxnMetadata`` is immutable: a coordinator operation builds
the next value with ``transition_to`` (which checks the table), writes it as a
record, and only replaying that record installs it.
"""

from __future__ import annotations

import enum
import functools
import struct
from dataclasses import dataclass, field, replace

from weir.protocol.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

from ..coordinator import records

#: Kafka bumps to a new producer id once the epoch reaches Short.MAX_VALUE - 1.
MAX_EPOCH = 32766

# Precompiled pieces of TransactionLogValue v0 (declared with construct in
# coordinator/records.py; a test checks they agree): the coordinator writes
# several records per transaction, and construct's build costs ~14 µs each.
_VALUE_HEAD = struct.Struct(">hqhibi")
_VALUE_TAIL = struct.Struct(">qq")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7


S = TxnState
#: state -> the states it may be entered from (transaction version 1)
LEGAL_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
COMPLETE = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})  # no transaction in flight
PREPARING = frozenset({S.PREPARE_COMMIT, S.PREPARE_ABORT})


class IllegalTransition(Exception):
    """A bug: the coordinator tried a transition the table does not allow."""


@dataclass(frozen=True, slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[tuple[str, int]] = field(default_factory=frozenset)
    start_ms: int = -1
    last_update_ms: int = -1
    # Kept in memory only (TransactionLogValue v0 has no field for them), as
    # Kafka keeps them under transaction version 1: they serve KIP-360 retries.
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    previous_producer_id: int = NO_PRODUCER_ID

    def transition_to(self, state: TxnState, **changes) -> TxnMetadata:
        if self.state not in LEGAL_PREVIOUS[state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state.name} -> {state.name}")
        return replace(self, state=state, **changes)

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH

    # ---------------------------------------------------------- record codec

    def key_bytes(self) -> bytes:
        return encode_key(self.transactional_id)

    def value_bytes(self) -> bytes:
        """TransactionLogValue v0; partitions are null in Empty, as Kafka writes them."""
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(self.partitions):
            by_topic.setdefault(topic, []).append(index)
        empty = self.state == TxnState.EMPTY
        out = bytearray(_VALUE_HEAD.pack(records.TXN_VALUE_VERSION, self.producer_id, self.producer_epoch,
                                         self.timeout_ms, int(self.state), -1 if empty else len(by_topic)))
        if not empty:
            for topic, ids in by_topic.items():
                name = topic.encode()
                out += _INT16.pack(len(name)) + name + _INT32.pack(len(ids))
                out += struct.pack(f">{len(ids)}i", *ids)
        out += _VALUE_TAIL.pack(self.last_update_ms, self.start_ms)
        return bytes(out)

    @classmethod
    def from_record(cls, transactional_id: str, value: bytes) -> TxnMetadata:
        parsed = records.TransactionLogValue.parse(value)
        partitions = frozenset((item.topic, index) for item in parsed.transaction_partitions or ()
                               for index in item.partition_ids)
        return cls(transactional_id, parsed.producer_id, parsed.producer_epoch, parsed.transaction_timeout_ms,
                   TxnState(parsed.transaction_status), partitions,
                   parsed.transaction_start_timestamp_ms, parsed.transaction_last_update_timestamp_ms)


@functools.lru_cache(maxsize=4096)
def encode_key(transactional_id: str) -> bytes:
    return records.TransactionLogKey.build({"version": records.TXN_KEY_VERSION,
                                            "transactional_id": transactional_id})


def decode_key(key: bytes) -> str | None:
    """The transactional id, or None for a key version this broker does not know."""
    parsed = records.TransactionLogKey.parse(key)
    return parsed.transactional_id if parsed.version == records.TXN_KEY_VERSION else None
