"""Rebalances of classic groups: from PreparingRebalance to a new generation, and the deadlines around it.

Kafka's rules: a rebalance completes when every member (and every member
told MEMBER_ID_REQUIRED) has rejoined, or when the rebalance timeout passes;
members that did not rejoin are removed, except static ones, who keep their
place until their session ends. The first rebalance of an empty group waits
``group.initial.rebalance.delay.ms``, again while new members keep arriving.
A new generation's members must send SyncGroup within the rebalance timeout;
every member must heartbeat (or have a request parked) within its session.
All of these are timers on the injected clock. The coordinator
(``coordinator.py``) decides when a rebalance starts; this module runs it.

A parked answer whose connection closed (its future was cancelled with the
connection's task) is dropped wherever it is delivered (``answer``); the
member stays, as in Kafka, until its session or the SyncGroup deadline ends.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from weir.protocol.errors import Errors, KafkaError

from .classic import ClassicGroup, GroupState, JoinResult, Member, SyncResult

if TYPE_CHECKING:
    from ..clock import Clock
    from ..config import BrokerConfig

log = logging.getLogger(__name__)

S = GroupState


class Rebalancer:
    def __init__(self, clock: Clock, config: BrokerConfig,
                 persist: Callable[[ClassicGroup, dict[str, bytes]], Awaitable[None]],
                 spawn: Callable[[Coroutine[Any, Any, Any]], None]) -> None:
        self.clock = clock
        self.config = config
        self.persist = persist  # async (group, assignments): store the group's metadata record
        self.spawn = spawn      # run a coroutine in the background, owned by the coordinator

    def maybe_prepare(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY):
            self.prepare(group, reason)

    def prepare(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            for member in group.members.values():
                member.assignment = b""
                self.answer_sync(group, member, SyncResult(Errors.REBALANCE_IN_PROGRESS))
        cancel(group.sync_timer)
        cancel(group.join_timer)
        group.pending_sync.clear()
        was_empty = group.is_in(S.EMPTY)
        log.info("group %s: preparing to rebalance in state %s with old generation %d (%s)",
                 group.group_id, group.state.value, group.generation, reason)
        group.transition_to(S.PREPARING_REBALANCE, self.clock.now_ms())
        if was_empty:
            # the first rebalance of an empty group waits a little for more members to arrive
            delay = self.config["group.initial.rebalance.delay.ms"]
            group.initial_join = True
            group.new_member_added = False
            self._initial_join_timer(group, delay, max(group.rebalance_timeout_ms() - delay, 0))
        else:
            group.initial_join = False
            group.join_timer = self.clock.call_later(group.rebalance_timeout_ms() / 1000,
                                                     functools.partial(self.complete_join, group))

    def _initial_join_timer(self, group: ClassicGroup, delay_ms: int, remaining_ms: int) -> None:
        def expired():
            if group.new_member_added and remaining_ms > 0:
                group.new_member_added = False
                step = min(self.config["group.initial.rebalance.delay.ms"], remaining_ms)
                self._initial_join_timer(group, step, remaining_ms - step)
            else:
                self.complete_join(group)
        group.join_timer = self.clock.call_later(delay_ms / 1000, expired)

    def try_complete_join(self, group: ClassicGroup) -> None:
        if group.is_in(S.PREPARING_REBALANCE) and not group.initial_join and group.all_members_joined():
            self.complete_join(group)

    def complete_join(self, group: ClassicGroup) -> None:
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        cancel(group.join_timer)
        group.join_timer = None
        for member in [m for m in group.members.values() if m.awaiting_join is None]:
            if member.group_instance_id is None:  # a static member keeps its place until its session ends
                log.info("group %s: member %s did not rejoin in time", group.group_id, member.member_id)
                cancel(member.session_timer)
                group.remove(member.member_id)
        now = self.clock.now_ms()
        if not group.members:
            group.generation += 1
            group.protocol_name = None
            group.leader_id = None
            group.transition_to(S.EMPTY, now)
            log.info("group %s: generation %d is empty", group.group_id, group.generation)
            self.spawn(self._persist_logged(group))
            return
        joined = [m for m in group.members.values() if m.awaiting_join is not None]
        if not joined:
            # only static members that have not come back: wait for them or for their sessions to end
            group.join_timer = self.clock.call_later(group.rebalance_timeout_ms() / 1000,
                                                     functools.partial(self.complete_join, group))
            return
        self._choose_leader(group, joined)
        group.generation += 1
        group.protocol_name = group.select_protocol()
        group.transition_to(S.COMPLETING_REBALANCE, now)
        group.pending_sync = set(group.members)
        generation = group.generation
        group.sync_timer = self.clock.call_later(group.rebalance_timeout_ms() / 1000,
                                                 functools.partial(self._expire_pending_sync, group, generation))
        log.info("group %s: generation %d with %d member(s), protocol %s, leader %s", group.group_id,
                 generation, len(group.members), group.protocol_name, group.leader_id)
        for member in joined:
            # a member whose connection closed stays in the generation (Kafka cannot tell either);
            # its session or the SyncGroup deadline removes it
            resolve_join(member, group.current_generation(member))
            self.schedule_session(group, member)

    @staticmethod
    def _choose_leader(group: ClassicGroup, joined: list[Member]) -> None:
        """Kafka keeps the leader if it rejoined, else takes the first member that did.

        Beyond Kafka: a leader whose JoinGroup connection has closed is passed over for a
        member that can still be answered. Kafka cannot see the disconnect and keeps it, so
        the group waits for the dead leader's session to end before anyone is assigned.
        """
        leader = group.members.get(group.leader_id or "")
        reachable = [member for member in joined if can_answer(member.awaiting_join)]
        if leader not in joined or (leader not in reachable and reachable):
            group.leader_id = (reachable or joined)[0].member_id

    async def _persist_logged(self, group: ClassicGroup) -> None:
        try:
            await self.persist(group, {})
        except KafkaError as exc:  # a failed append, logged once by the disk layer
            log.debug("group %s: storing group metadata failed: %s", group.group_id, exc)
        except Exception:
            log.exception("group %s: storing group metadata failed", group.group_id)

    def _expire_pending_sync(self, group: ClassicGroup, generation: int) -> None:
        if group.generation != generation or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
            return
        late = sorted(group.pending_sync)
        if not late:
            return
        for member_id in late:
            member = group.remove(member_id)
            if member is not None:
                cancel(member.session_timer)
                resolve_join(member, JoinResult(Errors.UNKNOWN_MEMBER_ID))
        self.prepare(group, f"no SyncGroup from {', '.join(late)} in time")
        self.try_complete_join(group)

    def answer_sync(self, group: ClassicGroup, member: Member, result: SyncResult) -> None:
        if member.awaiting_sync is not None:
            resolve_sync(member, result)
            self.schedule_session(group, member)  # it was alive while it waited

    def synced(self, group: ClassicGroup, member: Member) -> None:
        group.pending_sync.discard(member.member_id)
        if not group.pending_sync:
            cancel(group.sync_timer)
        self.schedule_session(group, member)

    def remove_member(self, group: ClassicGroup, member: Member, reason: str) -> None:
        resolve_join(member, JoinResult(Errors.UNKNOWN_MEMBER_ID))
        resolve_sync(member, SyncResult(Errors.UNKNOWN_MEMBER_ID))
        cancel(member.session_timer)
        group.remove(member.member_id)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self.prepare(group, reason)
        self.try_complete_join(group)

    def schedule_session(self, group: ClassicGroup, member: Member) -> None:
        cancel(member.session_timer)
        member.session_timer = self.clock.call_later(
            member.session_timeout_ms / 1000, functools.partial(self._session_expired, group, member))

    def _session_expired(self, group: ClassicGroup, member: Member) -> None:
        if group.members.get(member.member_id) is not member:
            return
        if member.awaiting_join is not None or member.awaiting_sync is not None:
            # a parked request counts as a heartbeat; the rebalance and sync deadlines bound the wait
            self.schedule_session(group, member)
            return
        log.info("group %s: member %s missed its session timeout (%d ms)", group.group_id, member.member_id,
                 member.session_timeout_ms)
        self.remove_member(group, member, f"member {member.member_id} session expired")


def can_answer(waiter) -> bool:
    """A parked answer can still be delivered: its request's connection has not closed.

    Closing a connection cancels its task, and with it the future the parked request awaits.
    """
    return waiter is not None and not waiter.done()


def answer(waiter, result) -> None:
    """Deliver a parked answer; one whose connection has gone is dropped, as Kafka drops it."""
    if can_answer(waiter):
        waiter.set_result(result)


def resolve_join(member: Member, result: JoinResult) -> None:
    """Answer the member's parked JoinGroup, if it has one."""
    if member.awaiting_join is not None:
        waiter, member.awaiting_join = member.awaiting_join, None
        answer(waiter, result)


def resolve_sync(member: Member, result: SyncResult) -> None:
    """Answer the member's parked SyncGroup, if it has one."""
    if member.awaiting_sync is not None:
        waiter, member.awaiting_sync = member.awaiting_sync, None
        answer(waiter, result)


def cancel(timer) -> None:
    if timer is not None:
        timer.cancel()
