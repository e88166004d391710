"""Membership of a consumer group through the consumer protocol (KIP-848): ConsumerGroupHeartbeat.

The broker assigns; the member reconciles. As Kafka's consumer (``ConsumerMembershipManager``,
``AbstractMembershipManager``, ``ConsumerHeartbeatRequestManager``):

- Joining is a heartbeat with member epoch 0, the member id this consumer chose for life
  (KIP-1082: a random UUID, Kafka's base64 form), the subscription (topic names, or one RE2/J
  regex in ``SubscribedTopicRegex``), the rebalance timeout (max.poll.interval.ms), the server
  assignor (group.remote.assignor) and an empty owned list.
- Later heartbeats go at the interval the broker answers with, and carry only what changed since
  the last one sent (subscription, assignor, owned partitions); after a failed heartbeat the next
  one carries everything again.
- An answer's assignment becomes the target. Reconciling it (in the application's ``getmany``,
  where the Java consumer runs its callbacks, in ``poll``): partitions no longer assigned are
  revoked first (offsets committed with auto-commit, the on-revoke hooks called), then the new
  ones are taken (committed offsets fetched, on-assign hooks), and the next heartbeat, sent at
  once, acknowledges the new owned set. The broker hands a partition to its new owner only after
  the old owner acknowledged its revocation, so no partition is owned twice at any moment.
- FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: the partitions are lost (on-lost hooks, no commit),
  and the member joins again with epoch 0 and its member id. UNRELEASED_INSTANCE_ID,
  FENCED_INSTANCE_ID, authorization, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR,
  UNSUPPORTED_VERSION are fatal: the next ``getmany`` raises them.
- No ``getmany`` for max.poll.interval.ms: the member leaves (epoch -1, or -2 when static), loses
  its partitions, and joins again on the next ``getmany``.
- Closing revokes the owned partitions and leaves: epoch -1, or -2 for a static member
  (group.instance.id), which keeps its place and partitions until it comes back or its session ends.

Offsets are committed with OffsetCommit v9 and read with OffsetFetch v9, both carrying the member
id and epoch; STALE_MEMBER_EPOCH and UNKNOWN_MEMBER_ID on a commit are CommitFailedError, as in the
Java consumer. The member epoch is also the generation of ``metadata()`` (ConsumerGroupMetadata),
so TxnOffsetCommit is fenced by member epochs (KIP-447 with KIP-848).

The pieces: ``member_state.py`` (the state table, assignments with local epochs),
``member_heartbeat.py`` (the heartbeat task, what each heartbeat carries, how answers move the
member), ``member_offsets.py`` (OffsetCommit and OffsetFetch v9); this module is the application's
side (subscribing, reconciling in getmany, leaving).

Deviations: topic ids the assignment names and the metadata cache does not know are resolved by
a Metadata request for every topic (the Java consumer asks its metadata to refresh the same way
for pattern subscriptions); switching a subscription between a topic list and a regex needs
a new consumer (the Java consumer refuses the switch while subscribed too); no rack id is sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from ..cluster import Cluster
from ..errors import IllegalStateError, KafkaException
from ..types import TopicPartition
from .group import GroupMetadata, RebalanceListener
from .member_heartbeat import MemberHeartbeats, SentFields
from .member_offsets import MemberOffsets
from .member_state import (JOIN_EPOCH, NONE, NOT_IN_GROUP, LocalAssignment, MemberState, Partitions, S,
                           new_member_id)

__all__ = ["ConsumerGroupMembership", "MemberState"]

log = logging.getLogger(__name__)


class ConsumerGroupMembership(MemberHeartbeats, MemberOffsets):
    def __init__(self, cluster: Cluster, group_id: str, *, group_instance_id: str | None,
                 remote_assignor: str | None, rebalance_timeout_ms: int, isolation_level: int,
                 on_assigned: Callable[[list[TopicPartition]], Awaitable[None]],
                 on_revoked: Callable[[list[TopicPartition]], Awaitable[None]],
                 on_lost: Callable[[list[TopicPartition]], Awaitable[None]],
                 listener: RebalanceListener | None = None):
        self.cluster = cluster
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.remote_assignor = remote_assignor
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.require_stable = isolation_level == 1
        self._on_assigned, self._on_revoked, self._on_lost = on_assigned, on_revoked, on_lost
        self.listener = listener
        self.topics: list[str] = []
        self.regex: str | None = None
        self.member_id = new_member_id()
        self.member_epoch = JOIN_EPOCH
        self.state = S.UNSUBSCRIBED
        self.current = NONE
        self.target = NONE
        self.owned: set[TopicPartition] = set()
        self.heartbeat_interval = 0.0  # until the broker says
        #: Set when the application's next getmany has group work: reconcile, release lost partitions.
        self.rejoin_needed = asyncio.Event()
        self.last_poll = time.monotonic()
        self._names: dict[bytes, str] = {}  # ids of topics assigned before, when metadata forgets them
        self._sent = SentFields()
        self._wake = asyncio.Event()
        self._fatal: KafkaException | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._generation = 0  # bumped at every rejoin: a reconciliation of an older one stops

    # ------------------------------------------------------------------ subscription and metadata

    @property
    def subscription(self) -> list[str]:
        """What the member subscribed to: topic names, or the one regex."""
        return [self.regex] if self.regex is not None else self.topics

    @property
    def generation_id(self) -> int:
        """The member epoch: what OffsetCommit, OffsetFetch and TxnOffsetCommit carry for it."""
        return self.member_epoch

    def metadata(self) -> GroupMetadata:
        """ConsumerGroupMetadata as the Java consumer gives it for the consumer protocol: the member
        epoch as generation id."""
        return GroupMetadata(self.group_id, self.member_epoch, self.member_id, self.group_instance_id)

    def subscribe(self, topics: list[str]) -> None:
        self._set_subscription(list(topics), None)

    def subscribe_pattern(self, regex: str) -> None:
        """Subscribe to the topics matching ``regex`` (RE2/J), which the broker resolves."""
        self._set_subscription([], regex)

    def _set_subscription(self, topics: list[str], regex: str | None) -> None:
        if self.state not in NOT_IN_GROUP and (regex is None) != (self.regex is None):
            raise IllegalStateError("subscriptions to topics and to a pattern are mutually exclusive")
        self.topics, self.regex = topics, regex
        self.rejoin_needed.set()

    # ------------------------------------------------------------------ the application's side

    async def ensure_active(self) -> None:
        """Called by every getmany: join, reconcile, release lost partitions, raise a fatal error."""
        self.last_poll = time.monotonic()
        self.rejoin_needed.clear()
        if self.state is S.FATAL and self.owned:
            await self._release(lost=True)
        if self._fatal is not None:
            raise self._fatal
        if self.state is S.FENCED:
            await self._release(lost=True)
            if self.state is S.FENCED:
                self._join()
        if self.state in (S.UNSUBSCRIBED, S.STALE) and self.subscription:
            if self.state is S.STALE and self.owned:
                await self._release(lost=True)
            self._join()
        if self.state is S.RECONCILING:
            await self._reconcile()
        self._start_heartbeats()

    def _join(self) -> None:
        self.member_epoch = JOIN_EPOCH
        self.transition_to(S.JOINING)
        self.current, self.target, self._sent = NONE, NONE, SentFields()
        self._names.clear()
        self._generation += 1
        self._wake.set()

    async def _reconcile(self) -> None:
        generation, target = self._generation, self.target
        resolved = await self._resolve(target.partitions)
        if not self._still(generation, target):
            return
        reconciled = LocalAssignment(target.epoch, {tid: frozenset(ps) for tid, ps in resolved.items()})
        assigned = {TopicPartition(self._names[tid], p) for tid, ps in resolved.items() for p in ps}
        if self.current is not NONE and reconciled.partitions == self.current.partitions:
            self._acknowledge(reconciled)  # what could be resolved is what we own: say so
            return
        revoked, added = self.owned - assigned, assigned - self.owned
        log.info("group %s member %s epoch %d reconciling: revoking %s, adding %s", self.group_id,
                 self.member_id, self.member_epoch, sorted(revoked), sorted(added))
        if revoked:
            try:
                await self._on_revoked(sorted(revoked))
            except KafkaException as exc:  # as Java: a failed commit before revocation does not stop it
                log.error("group %s: commit before revoking %s failed (%s); revoking anyway", self.group_id,
                          sorted(revoked), exc)
                await self._on_lost(sorted(revoked))
            self.owned -= revoked
            if self.listener is not None:
                await self.listener.on_partitions_revoked(revoked)
            if not self._still(generation, target):
                return
        if added:
            try:
                await self._on_assigned(sorted(added))  # committed offsets fetched: where to start
            except KafkaException as exc:  # not taken, not acknowledged: the next getmany tries again
                log.warning("group %s: taking %s failed (%s); trying again", self.group_id, sorted(added), exc)
                await self._on_lost(sorted(added))
                self.rejoin_needed.set()
                return
        self.owned |= added
        if self.listener is not None:
            await self.listener.on_partitions_assigned(added)
        if self._still(generation, target):
            self._acknowledge(reconciled)

    def _still(self, generation: int, target: LocalAssignment) -> bool:
        """A reconciliation goes on while the member is reconciling the same target of the same join."""
        return self.state is S.RECONCILING and generation == self._generation and target is self.target

    def _acknowledge(self, reconciled: LocalAssignment) -> None:
        self.current = reconciled
        self.transition_to(S.ACKNOWLEDGING)
        self._wake.set()

    async def _resolve(self, assignment: Partitions) -> Partitions:
        """The part of ``assignment`` whose topic names are known, asking Metadata once for the rest."""
        def known() -> Partitions:
            by_id = {info.topic_id: name for name, info in self.cluster.topics.items()}
            for tid in assignment:
                if tid in by_id:
                    self._names[tid] = by_id[tid]
            return {tid: ps for tid, ps in assignment.items() if tid in self._names}
        resolved = known()
        if len(resolved) < len(assignment):
            try:
                await self.cluster.refresh(None, allow_auto_create=False)
            except KafkaException as exc:
                log.debug("group %s: metadata for assigned topic ids failed: %s", self.group_id, exc)
            resolved = known()
            if len(resolved) < len(assignment):
                self.rejoin_needed.set()  # try again on the next getmany
        return resolved

    async def _release(self, *, lost: bool) -> None:
        """Give up every owned partition: lost (no commit) or revoked (commit, on-revoke hooks)."""
        dropped, self.owned = set(self.owned), set()
        self.current = NONE
        if not dropped:
            return
        if lost:
            await self._on_lost(sorted(dropped))
            if self.listener is not None:
                await self.listener.on_partitions_lost(dropped)
        else:
            await self._on_revoked(sorted(dropped))
            if self.listener is not None:
                await self.listener.on_partitions_revoked(dropped)

    async def close(self) -> None:
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
            await asyncio.gather(self._heartbeat_task, return_exceptions=True)
        if self.state in NOT_IN_GROUP:
            if self.owned:
                await self._release(lost=True)
            return
        self.transition_to(S.PREPARE_LEAVING)
        await self._release(lost=self.member_epoch <= 0)
        await self._leave()

