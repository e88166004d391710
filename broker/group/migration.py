"""Online migration between the classic and the consumer group protocol: when a group converts.

The conversions themselves (records, members) are ``consumer/conversion.py``'s; this module decides
when they happen and moves the live state (parked answers, timers) from one coordinator to the
other, as Kafka's GroupMetadataManager does:
- upgrade: the first ConsumerGroupHeartbeat (epoch 0) for a classic group with members, when
  ``group.consumer.migration.policy`` allows it and its members use the "consumer" embedded
  protocol (else the heartbeat gets GROUP_ID_NOT_FOUND, as in Kafka);
- downgrade: after a member leaves or is fenced, when only classic members remain.
A failed write of an upgrade leaves the group converted in memory (deviation: Kafka's runtime
reverts it); the next write that succeeds carries on from it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from weir.protocol.errors import Errors, KafkaError

from . import storage
from .classic import ClassicGroup, JoinResult, SyncResult
from .consumer import conversion
from .consumer.subscription import TopicsView
from .rebalance import cancel, resolve_join, resolve_sync

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

log = logging.getLogger(__name__)


class Migration:
    def __init__(self, groups_coordinator: GroupCoordinator) -> None:
        self.groups_coordinator = groups_coordinator

    async def maybe_upgrade(self, group_id: str, member_epoch: int) -> None:
        coordinator = self.groups_coordinator
        classic = coordinator.groups.get(group_id)
        if classic is not None and classic.members and member_epoch == 0 and conversion.can_upgrade(
                classic, coordinator.config["group.consumer.migration.policy"],
                coordinator.config["group.consumer.max.size"]):
            await self._upgrade(classic)

    async def _upgrade(self, classic: ClassicGroup) -> None:
        """A classic group becomes a consumer group whose members keep speaking the classic protocol."""
        coordinator, group_id = self.groups_coordinator, classic.group_id
        try:
            records = conversion.to_consumer_group(classic, TopicsView.of(coordinator.context.logs))
        except Exception:  # Kafka: GROUP_ID_NOT_FOUND when the embedded protocol is malformed
            raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {group_id} to consumer "
                                                        "group because the embedded consumer protocol is malformed.") \
                from None
        for member in classic.members.values():  # a rebalance under way: its members rejoin the new group
            resolve_join(member, JoinResult(Errors.REBALANCE_IN_PROGRESS, member_id=member.member_id))
            resolve_sync(member, SyncResult(Errors.REBALANCE_IN_PROGRESS))
        for timer in (classic.join_timer, classic.sync_timer, *(m.session_timer for m in classic.members.values())):
            cancel(timer)
        del coordinator.groups[group_id]
        consumer = coordinator.consumer
        for record in records:
            consumer.replay(record)
        for converted in consumer.groups[group_id].members.values():
            consumer.schedule(group_id, converted)
        log.info("group %s: upgraded from classic to consumer at generation %d", group_id, classic.generation)
        written = await consumer.write_raw(group_id, [(storage.group_key(group_id), None),
                                                      *(record.encode() for record in records)])
        if not written:
            raise KafkaError(Errors.COORDINATOR_NOT_AVAILABLE)

    def maybe_downgrade(self, group_id: str, generation: int) -> None:
        """After a member left: if only classic members remain, they form a classic group at ``generation``
        (the group epoch before the member left, as Kafka converts instead of bumping it: the members'
        generation still matches, so their heartbeats are told to rejoin, not that they are stale),
        which rebalances."""
        coordinator = self.groups_coordinator
        consumer, config = coordinator.consumer, coordinator.config
        group = consumer.groups.get(group_id)
        if group is None or not conversion.can_downgrade(group, config["group.consumer.migration.policy"],
                                                         config["group.max.size"]):
            return
        records, classic = conversion.to_classic_group(group, TopicsView.of(coordinator.context.logs),
                                                       coordinator.clock.now_ms(), generation)
        consumer.cancel_all(group_id)
        for record in records:
            consumer.replay(record)
        coordinator.groups[group_id] = classic
        key, value = storage.group_record(classic, {m.member_id: m.assignment for m in classic.members.values()})
        coordinator._spawn(consumer.write_raw(group_id, [*(record.encode() for record in records), (key, value)]))
        for member in classic.members.values():
            coordinator.rebalance.schedule_session(classic, member)
        log.info("group %s: downgraded from consumer to classic at generation %d", group_id, classic.generation)
        coordinator.rebalance.prepare(classic, f"Downgrade group {group_id} from consumer to classic.")
