"""The share-partitions of every share group on this broker, and the share sessions reaching them.

Kafka's ``SharePartitionManager``: one ``SharePartition`` per (group, topic id, partition), made
when the group first assigns the partition (or a member first fetches it) at the offset
``share.auto.offset.reset`` names; the share sessions; the waiters of long-polling share fetches,
woken by appends to the log and by records coming back to AVAILABLE.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from weir.protocol.errors import Errors, KafkaError

from ..log.fetch_waiters import FetchWaiters
from ..log.time_lookup import offset_for_timestamp
from .partition import Limits, SharePartition
from .sessions import ShareSessions

if TYPE_CHECKING:
    from ..context import BrokerContext
    from ..log.partition import Partition

PartitionKey = tuple[str, bytes, int]  # group id, topic id, partition

_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")


def duration_ms(text: str) -> int:
    """``PnDTnHnMn.nS`` (java.time.Duration's form, which by_duration takes) in milliseconds."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or text.strip() in ("P", "PT"):
        raise ValueError(f"not a duration: {text!r}")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


class SharePartitionManager:
    def __init__(self, context: BrokerContext) -> None:
        self.context = context
        self.clock = context.clock
        self.group_configs = context.group_configs
        self.partitions: dict[PartitionKey, SharePartition] = {}
        self.sessions = ShareSessions(context.config["group.share.max.share.sessions"])
        self.waiters = FetchWaiters()  # share fetches waiting for records to come back

    # ------------------------------------------------------------------ settings

    def limits(self, group_id: str) -> Limits:
        value = self.group_configs.value
        return Limits(lock_ms=value(group_id, "share.record.lock.duration.ms"),
                      delivery_limit=value(group_id, "share.delivery.count.limit"),
                      max_in_flight=value(group_id, "share.partition.max.record.locks"),
                      read_committed=value(group_id, "share.isolation.level") == "read_committed")

    # ------------------------------------------------------------------ share-partitions

    def log_partition(self, topic_id: bytes, index: int) -> Partition:
        for name, topic in self.context.logs.topics.items():
            if topic.topic_id == topic_id:
                return self.context.logs.partition(name, index)  # UNKNOWN_TOPIC_OR_PARTITION past the end
        raise KafkaError(Errors.UNKNOWN_TOPIC_ID)

    def get(self, group_id: str, topic_id: bytes, index: int) -> SharePartition:
        """The share-partition, made at ``share.auto.offset.reset`` if the group has none yet."""
        key = (group_id, topic_id, index)
        found = self.partitions.get(key)
        if found is None:
            log_partition = self.log_partition(topic_id, index)
            found = self.partitions[key] = SharePartition(group_id, log_partition,
                                                          self._initial_offset(group_id, log_partition),
                                                          self.clock, self.waiters.wake)
        return found

    def _initial_offset(self, group_id: str, log_partition: Partition) -> int:
        reset = self.group_configs.value(group_id, "share.auto.offset.reset")
        if reset == "earliest":
            return log_partition.log_start_offset
        if reset.startswith("by_duration:"):
            found = offset_for_timestamp(log_partition, self.clock.now_ms() - duration_ms(reset.split(":", 1)[1]))
            return found[0] if found is not None else log_partition.log_end_offset
        return log_partition.log_end_offset  # latest (Kafka's default)

    def release_member(self, group_id: str, member_id: str) -> None:
        """A member left its group or closed its session: its records go back to the group."""
        limits = self.limits(group_id)
        for (group, _, _), share_partition in self.partitions.items():
            if group == group_id:
                share_partition.release_member(member_id, limits)

    def member_left(self, group_id: str, member_id: str) -> None:
        self.sessions.close(group_id, member_id)
        self.release_member(group_id, member_id)
