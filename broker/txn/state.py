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

from weir.protocol.primitives import read_uvarint, write_uvarint
from weir.protocol.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

from ..coordinator import records

#: Kafka bumps to a new producer id once the epoch reaches Short.MAX_VALUE - 1.
MAX_EPOCH = 32766
#: The first transaction version whose EndTxn bumps the epoch (KIP-890 part 2).
TV2 = 2

# Precompiled pieces of TransactionLogValue v0 (declared with construct in
# coordinator/records.py; a test checks they agree): the coordinator writes
# several records per transaction, and construct's build costs ~14 µs each.
_VALUE_HEAD = struct.Struct(">hqhibi")
_VALUE_TAIL = struct.Struct(">qq")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_VALUE_HEAD_V1 = struct.Struct(">hqhib")  # version 1 through transaction_status; the rest is compact


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


#: Transaction version 2 may also abort with no transaction open (Kafka's "empty abort"): the
#: client's abortTransaction bumps the epoch whether or not anything was written.
TV2_EMPTY_ABORT_FROM = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


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
    # Kept in memory only (no record version has a field for it), as Kafka keeps it:
    # it serves KIP-360 retries of InitProducerId and TV2 retries of EndTxn.
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    # In the record only from TransactionLogValue v1, which Weir writes for TV2 transactions.
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID  # TV2: the id a Prepare* hands over once complete
    client_version: int = 0  # the transaction version the client's requests spoke (Kafka's clientTransactionVersion)

    def transition_to(self, state: TxnState, **changes) -> TxnMetadata:
        if self.state not in LEGAL_PREVIOUS[state] and not (
                state == S.PREPARE_ABORT and self.state in TV2_EMPTY_ABORT_FROM
                and changes.get("client_version", self.client_version) >= TV2):
            raise IllegalTransition(f"{self.transactional_id}: {self.state.name} -> {state.name}")
        return replace(self, state=state, **changes)

    @property
    def bumps_epoch_at_end(self) -> bool:
        return self.client_version >= TV2

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH

    # ---------------------------------------------------------- record codec

    def key_bytes(self) -> bytes:
        return encode_key(self.transactional_id)

    def value_bytes(self) -> bytes:
        """TransactionLogValue: v0 for transaction version 1, byte for byte as before; v1 (flexible,
        with previous/next producer id and the client's transaction version as tagged fields) once a
        transaction runs at version 2, as Kafka writes v1 when transaction.version >= 1. Partitions
        are null in Empty, as Kafka writes them."""
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(self.partitions):
            by_topic.setdefault(topic, []).append(index)
        empty = self.state == TxnState.EMPTY
        if self.client_version >= TV2:
            return self._value_v1(None if empty else by_topic)
        out = bytearray(_VALUE_HEAD.pack(records.TXN_VALUE_VERSION, self.producer_id, self.producer_epoch,
                                         self.timeout_ms, int(self.state), -1 if empty else len(by_topic)))
        if not empty:
            for topic, ids in by_topic.items():
                name = topic.encode()
                out += _INT16.pack(len(name)) + name + _INT32.pack(len(ids))
                out += struct.pack(f">{len(ids)}i", *ids)
        out += _VALUE_TAIL.pack(self.last_update_ms, self.start_ms)
        return bytes(out)

    def _value_v1(self, by_topic: dict[str, list[int]] | None) -> bytes:
        out = bytearray(_VALUE_HEAD_V1.pack(1, self.producer_id, self.producer_epoch, self.timeout_ms,
                                            int(self.state)))
        if by_topic is None:
            write_uvarint(out, 0)  # a null compact array
        else:
            write_uvarint(out, len(by_topic) + 1)
            for topic, ids in by_topic.items():
                name = topic.encode()
                write_uvarint(out, len(name) + 1)
                out += name
                write_uvarint(out, len(ids) + 1)
                out += struct.pack(f">{len(ids)}i", *ids)
                write_uvarint(out, 0)  # the partition entry's tagged fields
        out += _VALUE_TAIL.pack(self.last_update_ms, self.start_ms)
        tagged = [(tag, fmt.pack(value)) for tag, fmt, value, default in (
            (0, _INT64, self.previous_producer_id, NO_PRODUCER_ID),
            (1, _INT64, self.next_producer_id, NO_PRODUCER_ID),
            (2, _INT16, self.client_version, 0)) if value != default]
        write_uvarint(out, len(tagged))
        for tag, data in tagged:
            write_uvarint(out, tag)
            write_uvarint(out, len(data))
            out += data
        return bytes(out)

    @classmethod
    def from_record(cls, transactional_id: str, value: bytes) -> TxnMetadata:
        if _INT16.unpack_from(value)[0] >= 1:
            return cls._from_v1(transactional_id, value)
        parsed = records.TransactionLogValue.parse(value)
        partitions = frozenset((item.topic, index) for item in parsed.transaction_partitions or ()
                               for index in item.partition_ids)
        return cls(transactional_id, parsed.producer_id, parsed.producer_epoch, parsed.transaction_timeout_ms,
                   TxnState(parsed.transaction_status), partitions,
                   parsed.transaction_start_timestamp_ms, parsed.transaction_last_update_timestamp_ms)

    @classmethod
    def _from_v1(cls, transactional_id: str, value: bytes) -> TxnMetadata:
        _version, producer_id, epoch, timeout_ms, status = _VALUE_HEAD_V1.unpack_from(value)
        pos = _VALUE_HEAD_V1.size
        count, pos = read_uvarint(value, pos)
        partitions: set[tuple[str, int]] = set()
        for _ in range(count - 1):  # count 0 (null) and 1 (empty) both read no entry
            length, pos = read_uvarint(value, pos)
            topic = bytes(value[pos:pos + length - 1]).decode()
            pos += length - 1
            ids, pos = read_uvarint(value, pos)
            partitions.update((topic, index) for index in struct.unpack_from(f">{ids - 1}i", value, pos))
            pos += 4 * (ids - 1)
            pos = _skip_tagged(value, pos)
        update_ms, start_ms = _VALUE_TAIL.unpack_from(value, pos)
        fields = {}
        tags, pos = read_uvarint(value, pos + _VALUE_TAIL.size)
        for _ in range(tags):
            tag, pos = read_uvarint(value, pos)
            size, pos = read_uvarint(value, pos)
            if tag in (0, 1):
                fields[tag] = _INT64.unpack_from(value, pos)[0]
            elif tag == 2:
                fields[tag] = _INT16.unpack_from(value, pos)[0]
            pos += size  # tag 3 (next producer epoch, for KIP-939's prepared transactions) is not kept
        return cls(transactional_id, producer_id, epoch, timeout_ms, TxnState(status), frozenset(partitions),
                   start_ms, update_ms, previous_producer_id=fields.get(0, NO_PRODUCER_ID),
                   next_producer_id=fields.get(1, NO_PRODUCER_ID), client_version=fields.get(2, 0))


def _skip_tagged(value: bytes, pos: int) -> int:
    tags, pos = read_uvarint(value, pos)
    for _ in range(tags):
        _tag, pos = read_uvarint(value, pos)
        size, pos = read_uvarint(value, pos)
        pos += size
    return pos


@functools.lru_cache(maxsize=4096)
def encode_key(transactional_id: str) -> bytes:
    return records.TransactionLogKey.build({"version": records.TXN_KEY_VERSION,
                                            "transactional_id": transactional_id})


def decode_key(key: bytes) -> str | None:
    """The transactional id, or None for a key version this broker does not know."""
    parsed = records.TransactionLogKey.parse(key)
    return parsed.transactional_id if parsed.version == records.TXN_KEY_VERSION else None
