"""Membership of a consumer group (Kafka's classic protocol) and its committed offsets.

Joining: JoinGroup (rejoining with the member id a MEMBER_ID_REQUIRED answer
gives), the leader assigns with the protocol the group chose, SyncGroup hands
out the result. Eager protocols (range, roundrobin) revoke everything before
joining; the cooperative one (cooperative-sticky, KIP-429) revokes only what
moved, then rejoins so the moved partitions reach their new owner.

Heartbeats run in their own task, so slow processing does not cost the
membership; a consumer that stops calling ``getmany`` for longer than
``max_poll_interval_ms`` leaves the group, as the Java client does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Protocol
from collections.abc import Awaitable, Callable

from weir.protocol.api_keys import ApiKey
from weir.protocol.consumer_protocol import (MemberSubscription, decode_assignment, decode_subscription,
                                        encode_assignment, encode_subscription)
from weir.protocol.errors import Errors
from weir.protocol.messages import heartbeat, join_group, leave_group, offset_commit, sync_group

from .. import committed
from ..calls import Coordinator, default_error_of, first_retriable
from ..cluster import GROUP, Cluster
from ..errors import BrokerResponseError, KafkaException, error_instance, raise_for
from ..types import OffsetAndMetadata, TopicPartition
from .assignors import ASSIGNORS, COOPERATIVE

log = logging.getLogger(__name__)

_RESET_MEMBER = frozenset({Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION})
_REJOIN = _RESET_MEMBER | {Errors.REBALANCE_IN_PROGRESS, Errors.MEMBER_ID_REQUIRED}


class RebalanceListener(Protocol):
    """Called around rebalances (``Consumer(rebalance_listener=...)``), as the Java client's
    ConsumerRebalanceListener: any object with these three coroutines."""
    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Before a rebalance takes ``revoked`` away: the last moment to commit their offsets."""
    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """After a rebalance gave this member ``assigned``."""
    async def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        """``lost`` may already be another member's (the session expired): do not commit them."""


@dataclass(frozen=True)
class GroupMetadata:
    """The consumer's place in its group, for TxnOffsetCommit's zombie check (KIP-447)."""
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


class CommitFailedError(KafkaException):
    """The group rebalanced (or this member was removed): the commit cannot be made for this generation."""


class GroupMembership:
    def __init__(self, cluster: Cluster, group_id: str, *, group_instance_id: str | None, assignors: list[str],
                 session_timeout_ms: int, rebalance_timeout_ms: int, heartbeat_interval_ms: int,
                 isolation_level: int, on_assigned: Callable[[list[TopicPartition]], Awaitable[None]],
                 on_revoked: Callable[[list[TopicPartition]], Awaitable[None]],
                 listener: RebalanceListener | None = None) -> None:
        unknown = [name for name in assignors if name not in ASSIGNORS]
        if unknown or not assignors:
            raise ValueError(f"unknown partition_assignment_strategy {unknown}; known: {sorted(ASSIGNORS)}")
        self.cluster = cluster
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.assignors = [ASSIGNORS[name]() for name in assignors]
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.require_stable = isolation_level == 1
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self.listener = listener
        self.subscription: list[str] = []
        self.member_id = ""
        self.generation_id = -1
        self.protocol: str | None = None
        self.owned: set[TopicPartition] = set()
        self.rejoin_needed = asyncio.Event()
        self.last_poll = time.monotonic()
        self.rebalancing = False  # heartbeats pause while joining, as the Java client's do
        self._heartbeat_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ joining

    def subscribe(self, topics: list[str]) -> None:
        self.subscription = topics
        self.rejoin_needed.set()

    def metadata(self) -> GroupMetadata:
        return GroupMetadata(self.group_id, self.generation_id, self.member_id, self.group_instance_id)

    async def ensure_active(self) -> None:
        self.last_poll = time.monotonic()
        attempts = 0
        backoff = self.cluster.backoff_policy()
        while self.rejoin_needed.is_set():
            self.rejoin_needed.clear()
            self.rebalancing = True
            try:
                await self._rebalance()
            except KafkaException as exc:
                # The call path has retried what may be retried; a rebalance that moved on is joined
                # again, anything else is the application's to see (the Java consumer's poll throws it).
                if isinstance(exc, BrokerResponseError) and exc.code not in _REJOIN:
                    raise
                log.info("group %s: rejoining after %s", self.group_id, exc)
                self.rejoin_needed.set()
                await asyncio.sleep(backoff.backoff(attempts))  # KIP-580 backoff before rejoining, as Java's
                attempts += 1
            finally:
                self.rebalancing = False

    async def _rebalance(self) -> None:
        cooperative = self.protocol is not None and ASSIGNORS[self.protocol].protocol == COOPERATIVE
        if not cooperative and self.owned:
            await self._revoke(set(self.owned))
        joined = await self._join()
        if joined.leader == self.member_id:
            assignments = await self._lead(joined)
        else:
            assignments = []
        answer = await self._coordinator_request(ApiKey.SYNC_GROUP, lambda v: sync_group.REQUEST(
            group_id=self.group_id, generation_id=joined.generation_id, member_id=self.member_id,
            group_instance_id=self.group_instance_id, protocol_type="consumer", protocol_name=joined.protocol_name,
            assignments=assignments), highest=3)
        if answer.error_code in _RESET_MEMBER or answer.error_code == Errors.REBALANCE_IN_PROGRESS:
            if answer.error_code in _RESET_MEMBER:
                await self._lose()
            raise error_instance(answer.error_code, "SyncGroup", request=ApiKey.SYNC_GROUP)
        raise_for(answer.error_code, "SyncGroup", request=ApiKey.SYNC_GROUP)
        self.generation_id, self.protocol = joined.generation_id, joined.protocol_name
        assigned = {TopicPartition(topic, p) for topic, parts in decode_assignment(answer.assignment).items()
                    for p in parts}
        revoked = self.owned - assigned
        if revoked:  # cooperative: give these up, then rejoin so they reach their new owner
            await self._revoke(revoked)
            self.rejoin_needed.set()
        added = assigned - self.owned
        self.owned = assigned
        if added:
            await self._on_assigned(sorted(added))
        if self.listener is not None:
            await self.listener.on_partitions_assigned(added)
        self._start_heartbeats()

    async def _join(self) -> Any:
        protocols = [join_group.Protocol(name=a.name, metadata=encode_subscription(MemberSubscription(
            self.subscription, owned=_by_topic(self.owned), generation_id=self.generation_id)))
            for a in self.assignors]
        while True:
            joined = await self._coordinator_request(ApiKey.JOIN_GROUP, lambda v: join_group.REQUEST(
                group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=self.member_id,
                group_instance_id=self.group_instance_id, protocol_type="consumer", protocols=protocols),
                highest=5, timeout=self.rebalance_timeout_ms / 1000 + 5)
            code = joined.error_code
            if code == Errors.MEMBER_ID_REQUIRED:
                self.member_id = joined.member_id  # KIP-394: join again with the id the coordinator gave
                continue
            if code in _RESET_MEMBER:
                self.member_id, self.generation_id = "", -1
                continue
            raise_for(code, "JoinGroup", request=ApiKey.JOIN_GROUP)
            self.member_id = joined.member_id
            return joined

    async def _lead(self, joined: Any) -> list[Any]:
        assignor = ASSIGNORS[joined.protocol_name]()
        subscriptions = {m.member_id: decode_subscription(m.metadata) for m in joined.members}
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        await self.cluster.refresh(topics, allow_auto_create=False)
        partitions = {t: len(self.cluster.topics[t].partitions) for t in topics
                      if t in self.cluster.topics and not self.cluster.topics[t].error}
        result = assignor.assign(partitions, subscriptions)
        return [sync_group.Assignment(member_id=member, assignment=encode_assignment(parts))
                for member, parts in result.items()]

    async def _revoke(self, partitions: set[TopicPartition]) -> None:
        await self._on_revoked(sorted(partitions))
        if self.listener is not None:
            await self.listener.on_partitions_revoked(partitions)
        self.owned -= partitions

    async def _lose(self) -> None:
        """The coordinator no longer knows us: our partitions may already be someone else's."""
        lost = set(self.owned)
        self.member_id, self.generation_id, self.owned = "", -1, set()
        if lost:
            await self._on_revoked(sorted(lost))
            if self.listener is not None:
                await self.listener.on_partitions_lost(lost)
        self.rejoin_needed.set()

    # ------------------------------------------------------------------ heartbeats

    def _start_heartbeats(self) -> None:
        if self._heartbeat_task is None or self._heartbeat_task.done():
            self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeats())

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            if time.monotonic() - self.last_poll > self.rebalance_timeout_ms / 1000:
                log.warning("group %s: no getmany() for max_poll_interval_ms; leaving the group", self.group_id)
                await self._leave()
                await self._lose()
                return
            if self.rebalancing or self.rejoin_needed.is_set() or self.generation_id < 0:
                continue
            generation, member = self.generation_id, self.member_id
            try:
                # the lambda runs within this iteration (awaited here): the loop variables are current
                answer = await self._coordinator_request(ApiKey.HEARTBEAT, lambda v: heartbeat.REQUEST(
                    group_id=self.group_id, generation_id=generation, member_id=member,  # noqa: B023
                    group_instance_id=self.group_instance_id), highest=3)
            except KafkaException as exc:
                log.debug("heartbeat failed: %s", exc)
                continue
            if self.rebalancing or (generation, member) != (self.generation_id, self.member_id):
                continue  # a rebalance started meanwhile: this answer is about the old generation
            if answer.error_code == Errors.REBALANCE_IN_PROGRESS:
                self.rejoin_needed.set()
            elif answer.error_code in _RESET_MEMBER:
                await self._lose()
            elif answer.error_code == Errors.FENCED_INSTANCE_ID:
                log.error("group %s: instance id %s is fenced by a newer member", self.group_id,
                          self.group_instance_id)
                return

    # ------------------------------------------------------------------ offsets

    async def commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        if not offsets:
            return
        topics: dict[str, list[Any]] = {}
        for tp, offset in offsets.items():
            topics.setdefault(tp.topic, []).append(offset_commit.RequestPartition(
                partition_index=tp.partition, committed_offset=offset.offset,
                committed_leader_epoch=offset.leader_epoch, committed_metadata=offset.metadata))
        answer = await self._coordinator_request(ApiKey.OFFSET_COMMIT, lambda v: offset_commit.REQUEST(
            group_id=self.group_id, generation_id_or_member_epoch=self.generation_id, member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            topics=[offset_commit.RequestTopic(name=n, partitions=p) for n, p in topics.items()]),
            error_of=lambda r: first_retriable(p.error_code for t in r.topics for p in t.partitions))
        for topic in answer.topics:
            for partition in topic.partitions:
                code = partition.error_code
                if code in _RESET_MEMBER or code == Errors.REBALANCE_IN_PROGRESS:
                    self.rejoin_needed.set()
                    raise CommitFailedError(f"commit of {topic.name}-{partition.partition_index} refused: "
                                            f"{Errors(code).name}")
                raise_for(code, f"OffsetCommit {topic.name}-{partition.partition_index}", request=ApiKey.OFFSET_COMMIT)

    async def fetch_committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets; waits out transactional commits still pending (UNSTABLE_OFFSET_COMMIT)."""
        # UNSTABLE_OFFSET_COMMIT (a transaction with offsets is completing) is retriable: the call path
        # asks again until it settles.
        request = committed.request(self.group_id, partitions, require_stable=self.require_stable)
        answer = await self._coordinator_request(
            ApiKey.OFFSET_FETCH, lambda _v: request, highest=committed.ONE_GROUP_VERSION,
            error_of=lambda r: first_retriable(committed.answer_codes(r)))
        return committed.read_answer(answer, self.group_id)

    # ------------------------------------------------------------------ plumbing

    async def _coordinator_request(self, api_key: ApiKey, build: Callable[[int], Any], *, highest: int | None = None,
                                   timeout: float | None = None, error_of: Callable[[Any], int] | None = None) -> Any:
        """Send to the group coordinator through the call path (found again when it moved, retried while
        it loads) until request.timeout.ms (or the request's own longer ``timeout``, JoinGroup's) passes."""
        deadline = self.cluster.deadline(max(timeout or 0, self.cluster.request_timeout))
        return await self.cluster.call(Coordinator(GROUP, self.group_id), api_key, build, highest=highest,
                                       timeout=timeout, deadline=deadline,
                                       error_of=default_error_of if error_of is None else error_of)

    async def _leave(self) -> None:
        if not self.member_id or self.group_instance_id is not None:
            return  # a static member keeps its place across restarts (KIP-345): no LeaveGroup
        try:
            await self._coordinator_request(ApiKey.LEAVE_GROUP, lambda v: leave_group.REQUEST(
                group_id=self.group_id, member_id=self.member_id,
                members=[leave_group.MemberIdentity(member_id=self.member_id)]), highest=3)
        except KafkaException as exc:
            log.debug("LeaveGroup failed: %s", exc)

    async def close(self) -> None:
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
            await asyncio.gather(self._heartbeat_task, return_exceptions=True)
        if self.owned:
            await self._revoke(set(self.owned))
        await self._leave()


def _by_topic(partitions: set[TopicPartition]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for tp in partitions:
        found.setdefault(tp.topic, []).append(tp.partition)
    return found
