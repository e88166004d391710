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

Deviations: topic ids the assignment names and the metadata cache does not know are resolved by
a Metadata request for every topic (the Java consumer asks its metadata to refresh the same way
for pattern subscriptions); switching a subscription between a topic list and a regex needs
a new consumer (the Java consumer refuses the switch while subscribed too); no rack id is sent.
"""

from __future__ import annotations

import asyncio
import base64
import enum
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import consumer_group_heartbeat as cgh

from ..calls import Coordinator
from ..cluster import GROUP, Cluster
from ..errors import IllegalStateError, KafkaException, error_instance
from ..types import TopicPartition
from .group import GroupMetadata, RebalanceListener
from .member_offsets import MemberOffsets

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
REJOIN = frozenset({Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID})


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


@dataclass
class _SentFields:
    """What the last heartbeat sent, so the next sends only what changed (None: send it)."""
    rebalance_timeout_ms: int | None = None
    topics: tuple[str, ...] | None = None
    regex: str | None = None
    assignor: str | None = None
    assignment: LocalAssignment | None = None


class ConsumerGroupMembership(MemberOffsets):
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
        self._sent = _SentFields()
        self._wake = asyncio.Event()
        self._fatal: KafkaException | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._generation = 0  # bumped at every rejoin: a reconciliation of an older one stops

    # ------------------------------------------------------------------ state

    def transition_to(self, state: MemberState) -> None:
        if state is not self.state and self.state not in PREVIOUS[state]:
            raise AssertionError(f"member state {self.state.value} cannot become {state.value}")
        if state is not self.state:
            log.debug("group %s member %s epoch %d: %s -> %s", self.group_id, self.member_id, self.member_epoch,
                      self.state.value, state.value)
        self.state = state

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
        self.current, self.target, self._sent = NONE, NONE, _SentFields()
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
        self.owned |= added
        if added:
            await self._on_assigned(sorted(added))
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

    # ------------------------------------------------------------------ heartbeats

    def _start_heartbeats(self) -> None:
        if self.state is not S.UNSUBSCRIBED and (self._heartbeat_task is None or self._heartbeat_task.done()):
            self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeats())

    async def _heartbeats(self) -> None:
        backoff = self.cluster.backoff_policy()
        failures = 0
        last_sent = 0.0
        while self.state is not S.FATAL:
            if self.state in NOT_IN_GROUP:  # fenced or stale: the next getmany joins again and wakes us
                self._wake.clear()
                await self._wake.wait()
                continue
            poll_expires = self.last_poll + self.rebalance_timeout_ms / 1000
            if self.state not in HEARTBEAT_NOW:
                wait = min(last_sent + self.heartbeat_interval, poll_expires) - time.monotonic()
                if wait > 0:
                    self._wake.clear()
                    try:
                        await asyncio.wait_for(self._wake.wait(), wait)
                    except TimeoutError:
                        pass
                    continue
            if time.monotonic() >= poll_expires:
                log.warning("group %s: no getmany() for max_poll_interval_ms; leaving the group", self.group_id)
                await self._leave(stale=True)
                continue
            last_sent = time.monotonic()
            request = self._build_request()
            try:
                response = await self.cluster.call(Coordinator(GROUP, self.group_id),
                                                   ApiKey.CONSUMER_GROUP_HEARTBEAT, request, highest=1)
            except KafkaException as exc:
                log.debug("group %s: heartbeat failed: %s", self.group_id, exc)
                self._sent = _SentFields()  # the next one says everything again, after the backoff
                await asyncio.sleep(backoff.backoff(failures))
                failures += 1
                last_sent = 0.0
                continue
            failures = 0
            if response.error_code:
                self._sent = _SentFields()
                self._on_error(response.error_code, response.error_message)
            else:
                self._on_success(response)

    def _build_request(self) -> Callable[[int], Any]:
        """The next heartbeat: everything when joining, else only what changed since the last one."""
        sent, joining = self._sent, self.state is S.JOINING
        timeout = regex = assignor = None
        topics: list[str] | None = None
        owned: list[Any] | None = None
        if joining or sent.rebalance_timeout_ms != self.rebalance_timeout_ms:
            timeout = sent.rebalance_timeout_ms = self.rebalance_timeout_ms
        if self.regex is None and (joining or sent.topics != tuple(sorted(self.topics))):
            topics = list(self.topics)
            sent.topics = tuple(sorted(self.topics))
        if self.regex is not None and (joining or sent.regex != self.regex):
            regex = sent.regex = self.regex
        if self.remote_assignor is not None and (joining or sent.assignor != self.remote_assignor):
            assignor = sent.assignor = self.remote_assignor
        if joining or sent.assignment != self.current:
            owned = [cgh.TopicPartitions(topic_id=tid, partitions=sorted(ps))
                     for tid, ps in sorted(self.current.partitions.items())]
            sent.assignment = self.current
        if self.state is S.ACKNOWLEDGING:  # the acknowledgement is on its way
            self.transition_to(S.STABLE if self.current == self.target else S.RECONCILING)
            if self.state is S.RECONCILING:
                self.rejoin_needed.set()
        member_id, epoch, instance = self.member_id, self.member_epoch, self.group_instance_id

        def build(version: int) -> Any:
            if regex is not None and version < 1:
                raise error_instance(Errors.UNSUPPORTED_VERSION, "a regex subscription needs "
                                     "ConsumerGroupHeartbeat v1", request=ApiKey.CONSUMER_GROUP_HEARTBEAT)
            return cgh.REQUEST(group_id=self.group_id, member_id=member_id if version >= 1 or epoch else "",
                               member_epoch=epoch, instance_id=instance, rebalance_timeout_ms=
                               -1 if timeout is None else timeout, subscribed_topic_names=topics,
                               subscribed_topic_regex=regex, server_assignor=assignor, topic_partitions=owned)
        return build

    def _on_success(self, response: Any) -> None:
        if self.state in NOT_IN_GROUP or self.state is S.LEAVING:
            return  # an answer about a membership given up meanwhile
        self.heartbeat_interval = response.heartbeat_interval_ms / 1000
        self.member_id = response.member_id or self.member_id
        self.member_epoch = response.member_epoch
        if response.assignment is None or self.state not in TAKES_ASSIGNMENT:
            return
        target = {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions
                  if tp.partitions}
        updated = self.target.updated(target)
        if updated is not None:
            self.target = updated
        if self.current != self.target:
            self.transition_to(S.RECONCILING)
            self.rejoin_needed.set()
        elif self.state in (S.RECONCILING, S.JOINING):
            self.transition_to(S.STABLE)

    def _on_error(self, code: int, message: str | None) -> None:
        if code in REJOIN:
            log.info("group %s member %s epoch %d: %s; partitions are lost, joining again", self.group_id,
                     self.member_id, self.member_epoch, Errors(code).name)
            if self.state in (S.PREPARE_LEAVING, S.LEAVING):
                return
            self.member_epoch = JOIN_EPOCH
            self.transition_to(S.FENCED)
        else:
            log.error("group %s member %s: heartbeat failed with %s: %s", self.group_id, self.member_id,
                      Errors(code).name if code in Errors._value2member_map_ else code, message)
            self._fatal = error_instance(code, f"group {self.group_id}: {message or ''}".rstrip(": "),
                                         request=ApiKey.CONSUMER_GROUP_HEARTBEAT)
            self.transition_to(S.FATAL)
        self.rejoin_needed.set()

    # ------------------------------------------------------------------ leaving

    async def _leave(self, *, stale: bool = False) -> None:
        """One heartbeat with the leave epoch (-2 keeps a static member's place), its answer ignored."""
        if self.state in NOT_IN_GROUP:
            return
        if self.state is not S.PREPARE_LEAVING:
            self.transition_to(S.PREPARE_LEAVING)
        self.member_epoch = LEAVE_EPOCH if self.group_instance_id is None else LEAVE_STATIC_EPOCH
        self.current = NONE
        self.transition_to(S.LEAVING)
        member_id, epoch, instance = self.member_id, self.member_epoch, self.group_instance_id
        try:
            await self.cluster.call(Coordinator(GROUP, self.group_id), ApiKey.CONSUMER_GROUP_HEARTBEAT,
                                    lambda _v: cgh.REQUEST(group_id=self.group_id, member_id=member_id,
                                                           member_epoch=epoch, instance_id=instance),
                                    highest=1)
        except KafkaException as exc:
            log.debug("group %s: leave heartbeat failed: %s", self.group_id, exc)
        if stale:
            self.transition_to(S.STALE)
            await self._release(lost=True)
            self.rejoin_needed.set()
        else:
            self.transition_to(S.UNSUBSCRIBED)

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

