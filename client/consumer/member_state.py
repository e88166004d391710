"""The states of a consumer-protocol member (KIP-848) and their legal transitions: Kafka's
``MemberState`` table, one ``transition_to`` that checks it; the assignment a member holds with
its local epoch; the epochs the protocol gives a meaning to; member ids as the Java consumer
makes them (KIP-1082)."""

from __future__ import annotations

import base64
import enum
import logging
import uuid
from dataclasses import dataclass

log = logging.getLogger(__name__)

JOIN_EPOCH, LEAVE_EPOCH, LEAVE_STATIC_EPOCH = 0, -1, -2
Partitions = dict[bytes, frozenset[int]]  # topic id -> partitions


class MemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    STABLE = "stable"
    FENCED = "fenced"
    PREPARE_LEAVING = "prepare leaving"
    LEAVING = "leaving"
    FATAL = "fatal"
    STALE = "stale"  # left after max.poll.interval.ms without getmany; joins again on the next one


S = MemberState
#: The states each state may be entered from (Kafka's MemberState table).
PREVIOUS: dict[MemberState, frozenset[MemberState]] = {
    S.STABLE: frozenset({S.JOINING, S.ACKNOWLEDGING, S.RECONCILING}),
    S.RECONCILING: frozenset({S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING}),
    S.ACKNOWLEDGING: frozenset({S.RECONCILING}),
    S.FATAL: frozenset({S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING,
                        S.UNSUBSCRIBED}),
    S.FENCED: frozenset({S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING}),
    S.JOINING: frozenset({S.FENCED, S.UNSUBSCRIBED, S.STALE}),
    S.PREPARE_LEAVING: frozenset({S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.UNSUBSCRIBED}),
    S.LEAVING: frozenset({S.PREPARE_LEAVING}),
    S.UNSUBSCRIBED: frozenset({S.PREPARE_LEAVING, S.LEAVING, S.FENCED}),
    S.STALE: frozenset({S.LEAVING}),
}
NOT_IN_GROUP = frozenset({S.UNSUBSCRIBED, S.FENCED, S.FATAL, S.STALE})
HEARTBEAT_NOW = frozenset({S.JOINING, S.ACKNOWLEDGING, S.LEAVING})
TAKES_ASSIGNMENT = PREVIOUS[S.RECONCILING]


def new_member_id() -> str:
    """A member id as the Java consumer makes one (KIP-1082): a random UUID in Kafka's base64 form."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass(frozen=True)
class LocalAssignment:
    """An assignment and its local epoch: bumped at every new target, so that a reconciled
    assignment equal in partitions to the last one sent is still acknowledged once."""
    epoch: int
    partitions: Partitions

    def updated(self, partitions: Partitions) -> LocalAssignment | None:
        if self.epoch >= 0 and partitions == self.partitions:
            return None
        return LocalAssignment(self.epoch + 1, partitions)


NONE = LocalAssignment(-1, {})


class MemberStateMachine:
    """The member's state; ``transition_to`` is the only way it changes."""

    state: MemberState
    group_id: str
    member_id: str
    member_epoch: int

    def transition_to(self, state: MemberState) -> None:
        if state is not self.state and self.state not in PREVIOUS[state]:
            raise AssertionError(f"member state {self.state.value} cannot become {state.value}")
        if state is not self.state:
            log.debug("group %s member %s epoch %d: %s -> %s", self.group_id, self.member_id, self.member_epoch,
                      self.state.value, state.value)
        self.state = state
