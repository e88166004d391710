"""The heartbeat side of a consumer-protocol member (KIP-848): one task sending ConsumerGroupHeartbeat
at the interval the broker answers with (at once while joining, acknowledging or leaving), each
carrying only what changed since the last one sent, as Kafka's ``ConsumerHeartbeatRequestManager``
builds it; the answers move the member (``MemberState``): a new assignment to reconcile, fencing
(FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: rejoin at epoch 0), anything else fatal. Retriable answers
(NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...) and lost connections are the call path's.
The poll timer (max.poll.interval.ms) is watched here too: when it runs out, the member leaves."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import consumer_group_heartbeat as cgh

from ..calls import Coordinator
from ..cluster import GROUP, Cluster
from ..error_policy import Outcome, classify
from ..errors import BrokerResponseError, KafkaException, error_instance
from .member_state import (HEARTBEAT_NOW, JOIN_EPOCH, LEAVE_EPOCH, LEAVE_STATIC_EPOCH, NONE, NOT_IN_GROUP,
                           TAKES_ASSIGNMENT, LocalAssignment, MemberStateMachine, S)

log = logging.getLogger(__name__)


@dataclass
class SentFields:
    """What the last heartbeat sent, so the next sends only what changed (None: send it)."""
    rebalance_timeout_ms: int | None = None
    topics: tuple[str, ...] | None = None
    regex: str | None = None
    assignor: str | None = None
    assignment: LocalAssignment | None = None


class MemberHeartbeats(MemberStateMachine):
    """Mixed into ConsumerGroupMembership, which owns these attributes."""

    cluster: Cluster
    group_instance_id: str | None
    remote_assignor: str | None
    rebalance_timeout_ms: int
    topics: list[str]
    regex: str | None
    current: LocalAssignment
    target: LocalAssignment
    heartbeat_interval: float
    rejoin_needed: asyncio.Event
    last_poll: float
    _sent: SentFields
    _wake: asyncio.Event
    _fatal: KafkaException | None
    _heartbeat_task: asyncio.Task[None] | None

    async def _release(self, *, lost: bool) -> None:
        raise NotImplementedError

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
                if isinstance(exc, BrokerResponseError) and not exc.retriable:
                    self._on_error(exc.code, str(exc))  # no ConsumerGroupHeartbeat (v1 for a regex) here: fatal
                    continue
                log.debug("group %s: heartbeat failed: %s", self.group_id, exc)
                self._sent = SentFields()  # the next one says everything again, after the backoff
                await asyncio.sleep(backoff.backoff(failures))
                failures += 1
                last_sent = 0.0
                continue
            failures = 0
            if response.error_code:
                self._sent = SentFields()
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
            reconciled = self.current == self.target
            self.transition_to(S.STABLE if reconciled else S.RECONCILING)
            if not reconciled:
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
        if classify(ApiKey.CONSUMER_GROUP_HEARTBEAT, code) is Outcome.ABORTABLE:  # fenced: rejoin
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
