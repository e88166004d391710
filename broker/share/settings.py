"""The share groups' broker settings (KIP-932), under Kafka 4.4's names, defaults and ranges (its
ShareGroupConfig and GroupCoordinatorConfig), merged into broker/config.py's table as (lowest,
highest, default, doc). Each group.share.X is the default of the group config share.X
(broker/group/configs.py), which its min and max bound; the start-up checks of a value against its
min and max are broker/group/share/coordinator.py's."""

from __future__ import annotations

SHARE_SETTINGS: dict[str, tuple[int | None, int | None, int, str]] = {
    "group.share.session.timeout.ms": (1, None, 45000,
                                       "a share group member is removed after this long without a heartbeat"),
    "group.share.min.session.timeout.ms": (1, None, 45000, "shortest group.share.session.timeout.ms"),
    "group.share.max.session.timeout.ms": (1, None, 60000, "longest group.share.session.timeout.ms"),
    "group.share.heartbeat.interval.ms": (1, None, 5000, "how often share group members heartbeat"),
    "group.share.min.heartbeat.interval.ms": (1, None, 5000, "shortest group.share.heartbeat.interval.ms"),
    "group.share.max.heartbeat.interval.ms": (1, None, 15000, "longest group.share.heartbeat.interval.ms"),
    "group.share.record.lock.duration.ms": (1000, 3600000, 30000,
                                            "how long a share group member holds the records it acquired"),
    "group.share.min.record.lock.duration.ms": (1000, 30000, 15000, "shortest group.share.record.lock.duration.ms"),
    "group.share.max.record.lock.duration.ms": (30000, 3600000, 60000, "longest group.share.record.lock.duration.ms"),
    "group.share.delivery.count.limit": (2, 10, 5, "deliveries of a record before a share group archives it"),
    "group.share.min.delivery.count.limit": (2, 5, 2, "lowest group.share.delivery.count.limit"),
    "group.share.max.delivery.count.limit": (5, 25, 10, "highest group.share.delivery.count.limit"),
    "group.share.partition.max.record.locks": (100, 10000, 2000, "records in flight per share-partition"),
    "group.share.min.partition.max.record.locks": (100, 2000, 100, "lowest group.share.partition.max.record.locks"),
    "group.share.max.partition.max.record.locks": (2000, 10000, 4000, "highest group.share.partition.max.record.locks"),
    "group.share.max.size": (1, 1000, 200, "most members a share group may have"),
    "group.share.max.share.sessions": (1, None, 2000, "most share sessions the broker keeps"),
    "share.coordinator.state.topic.num.partitions": (1, None, 50, "partitions of __share_group_state"),
    "share.coordinator.state.topic.segment.bytes": (1, None, 104857600, "segment.bytes of __share_group_state"),
}
