"""When a streams group's target assignment is computed, and when a member slow to revoke is fenced:
Kafka 4.4's GroupMetadataManager rules.

- Initial rebalance delay (``streams.initial.rebalance.delay.ms``, a group config over the broker's
  ``group.streams.initial.rebalance.delay.ms``): a member joining an empty group starts a timer; until
  it fires no target is computed, and every heartbeat is answered status ASSIGNMENT_DELAYED. When it
  fires, the target is computed for the members there are.
- Assignment interval (``streams.assignment.interval.ms``): a new target is computed at most once per
  interval; a heartbeat that would compute one sooner is answered ASSIGNMENT_DELAYED and the members
  keep reconciling towards the last target. A later heartbeat computes it (Kafka sets no timer either).
- Rebalance timeout: a member that is asked to revoke active tasks has its own ``RebalanceTimeoutMs``
  to do it; still at the same epoch then, it is fenced (removed, the group epoch bumped).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..consumer.member import MemberState
from .group import StreamsGroup, StreamsMember
from .topology import ASSIGNMENT_DELAYED

__all__ = ["ASSIGNMENT_DELAYED", "RebalanceTimers"]

if TYPE_CHECKING:
    from ...clock import Clock, Timer
    from ..configs import GroupConfigs

INITIAL_DELAY = "Assignment delayed due to the configured initial rebalance delay."
INTERVAL_DELAY = "Assignment delayed due to the configured assignment interval."


class RebalanceTimers:
    """The initial-delay timer of each group and the revocation deadline of each member."""

    def __init__(self, clock: Clock, group_configs: GroupConfigs):
        self.clock = clock
        self.group_configs = group_configs
        self._initial: dict[str, Timer] = {}
        self._revocations: dict[tuple[str, str], tuple[int, Timer]] = {}  # -> (member epoch, timer)

    def joined_empty_group(self, group: StreamsGroup, assign: Callable[[], None]) -> None:
        """A member joined a group that had none: start the initial delay, unless one runs. The members
        joining during it reconcile to an empty target at the epoch of this join (Kafka 4.4.0 answers
        them that epoch)."""
        group_id = group.group_id
        delay_ms = self.group_configs.value(group_id, "streams.initial.rebalance.delay.ms")
        if delay_ms > 0 and group_id not in self._initial:
            group.assignment_epoch, group.target = group.group_epoch, {}
            def fire() -> None:
                self._initial.pop(group_id, None)
                assign()
            self._initial[group_id] = self.clock.call_later(delay_ms / 1000, fire)

    def delayed(self, group: StreamsGroup) -> str | None:
        """Why no target may be computed now (the ASSIGNMENT_DELAYED detail), or None."""
        if group.group_id in self._initial:
            return INITIAL_DELAY
        if group.assignment_epoch >= group.group_epoch:
            return None
        interval_ms = self.group_configs.value(group.group_id, "streams.assignment.interval.ms")
        last = group.assignment_timestamp_ms
        if last and interval_ms and self.clock.now_ms() < last + interval_ms:
            return INTERVAL_DELAY
        return None

    def revocation(self, group_id: str, member: StreamsMember, fence: Callable[[str, str, int, str], None]) -> None:
        """``fence(group id, member id, epoch, why)`` removes the member if it is still at that epoch."""
        # after a heartbeat: a member left revoking gets a deadline at its epoch; any other has none
        key = (group_id, member.member_id)
        current = self._revocations.get(key)
        if member.state != MemberState.UNREVOKED_PARTITIONS:
            self.cancel_revocation(group_id, member.member_id)
            return
        if current is not None and current[0] == member.member_epoch:
            return  # the deadline set when it was asked runs on (Kafka resets it only on a change)
        self.cancel_revocation(group_id, member.member_id)
        epoch, timeout_ms = member.member_epoch, member.rebalance_timeout_ms
        why = f"it failed to revoke its tasks from epoch {epoch} within {timeout_ms} ms"
        self._revocations[key] = (epoch, self.clock.call_later(
            max(timeout_ms, 0) / 1000, functools.partial(self._expired, key, epoch, why, fence)))

    def _expired(self, key: tuple[str, str], epoch: int, why: str,
                 fence: Callable[[str, str, int, str], None]) -> None:
        current = self._revocations.pop(key, None)
        if current is not None and current[0] == epoch:
            fence(key[0], key[1], epoch, why)

    def cancel_revocation(self, group_id: str, member_id: str) -> None:
        current = self._revocations.pop((group_id, member_id), None)
        if current is not None:
            current[1].cancel()

    def forget_group(self, group_id: str) -> None:
        timer = self._initial.pop(group_id, None)
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        for timer in self._initial.values():
            timer.cancel()
        for _epoch, timer in self._revocations.values():
            timer.cancel()
        self._initial.clear()
        self._revocations.clear()
