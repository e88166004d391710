"""The streams groups' broker settings Weir acts on (KIP-1071), under Kafka 4.4's names, defaults and
ranges (its GroupCoordinatorConfig), merged into broker/config.py's table as (lowest, highest,
default, doc). Each group.streams.X is the default of the group config streams.X
(broker/group/configs.py), which its min and max bound. The assignment interval and the initial
rebalance delay stay inert (broker/inert_settings.py): Weir assigns at once."""

from __future__ import annotations

STREAMS_SETTINGS: dict[str, tuple[int | None, int | None, int, str]] = {
    "group.streams.session.timeout.ms": (1, None, 45000,
                                         "a streams group member is removed after this long without a heartbeat"),
    "group.streams.min.session.timeout.ms": (1, None, 45000, "shortest group.streams.session.timeout.ms"),
    "group.streams.max.session.timeout.ms": (1, None, 60000, "longest group.streams.session.timeout.ms"),
    "group.streams.heartbeat.interval.ms": (1, None, 5000, "how often streams group members heartbeat"),
    "group.streams.min.heartbeat.interval.ms": (1, None, 5000, "shortest group.streams.heartbeat.interval.ms"),
    "group.streams.max.heartbeat.interval.ms": (1, None, 15000, "longest group.streams.heartbeat.interval.ms"),
    "group.streams.num.standby.replicas": (0, None, 0, "standby tasks per active task of a streams group"),
    "group.streams.max.standby.replicas": (0, None, 2, "most group.streams.num.standby.replicas"),
    "group.streams.task.offset.interval.ms": (15000, None, 60000,
                                              "how often streams group members report their task offsets"),
    "group.streams.min.task.offset.interval.ms": (1, None, 15000, "shortest group.streams.task.offset.interval.ms"),
}
