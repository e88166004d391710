"""The state of one in-flight record of a share-partition, and its legal moves (a table).

Ids are Kafka's ``RecordState`` ids, the ones its share-group state records carry.
Acknowledge types are Kafka 4.4's ``AcknowledgeType`` ids, with GAP (0) for offsets
the client found no record at (compacted away, control records).
"""

from __future__ import annotations

import enum

from weir.protocol.errors import Errors, KafkaError


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


S = RecordState

#: state -> the states it may move to; ACQUIRED -> ACQUIRED is a renewed lock (RENEW)
TRANSITIONS: dict[RecordState, frozenset[RecordState]] = {
    S.AVAILABLE: frozenset({S.ACQUIRED, S.ARCHIVED}),  # ARCHIVED: the start offset moved past it
    S.ACQUIRED: frozenset({S.AVAILABLE, S.ACQUIRED, S.ACKNOWLEDGED, S.ARCHIVED}),
    S.ACKNOWLEDGED: frozenset(),
    S.ARCHIVED: frozenset(),
}

TERMINAL = frozenset({S.ACKNOWLEDGED, S.ARCHIVED})


def check_transition(current: RecordState, target: RecordState) -> None:
    if target not in TRANSITIONS[current]:
        raise KafkaError(Errors.INVALID_RECORD_STATE, f"a record cannot move from {current.name} to {target.name}")


class AcknowledgeType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4
