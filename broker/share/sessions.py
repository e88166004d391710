"""Share sessions (KIP-932): which share-partitions a member fetches, and the epoch of its next request.

Kafka's ``ShareSessionCache``, keyed by (group id, member id). Epoch 0 opens a session (a full
request, replacing one the member had), -1 closes it, any other value must be the session's next
epoch (INVALID_SHARE_SESSION_EPOCH otherwise, SHARE_SESSION_NOT_FOUND without a session). The
cache holds at most ``group.share.max.share.sessions``; one more is SHARE_SESSION_LIMIT_REACHED.
A session belongs to the connection that opened it and ends when that connection closes, the
member's records going back to the group, as Kafka 4.4 does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from weir.protocol.errors import Errors, KafkaError

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

Key = tuple[bytes, int]  # topic id, partition


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # the epoch the next request must carry
    partitions: dict[Key, None] = field(default_factory=dict)  # ordered set
    connection: object | None = None  # the connection that opened it: the session ends with it


class ShareSessions:
    def __init__(self, max_sessions: int):
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def open(self, group_id: str, member_id: str) -> ShareSession:
        """A new session for the member, replacing the one it had."""
        key = (group_id, member_id)
        replaced = self.sessions.pop(key, None)
        if replaced is None and len(self.sessions) >= self.max_sessions:
            raise KafkaError(Errors.SHARE_SESSION_LIMIT_REACHED,
                             f"the share session cache is full ({self.max_sessions} sessions)")
        session = self.sessions[key] = ShareSession(group_id, member_id)
        return session

    def next(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The session an incremental (or final) request continues; its epoch moves on."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise KafkaError(Errors.SHARE_SESSION_NOT_FOUND, f"no share session for member {member_id}")
        if epoch == FINAL_EPOCH:
            return session
        if epoch != session.epoch:
            raise KafkaError(Errors.INVALID_SHARE_SESSION_EPOCH,
                             f"share session epoch {epoch}, expected {session.epoch}")
        session.epoch = 1 if session.epoch == 0x7FFFFFFF else session.epoch + 1
        return session

    def close(self, group_id: str, member_id: str, connection: object | None = None) -> ShareSession | None:
        """End the member's session (only if ``connection`` opened it, when given)."""
        session = self.sessions.get((group_id, member_id))
        if session is None or (connection is not None and session.connection is not connection):
            return None
        return self.sessions.pop((group_id, member_id))
