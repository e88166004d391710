"""The streams groups' broker settings Weir acts on (KIP-1071), under Kafka 4.4's names, defaults and
ranges (its GroupCoordinatorConfig), merged into broker/config.py's table as (lowest, highest,
default, doc). Each group.streams.X is the default of the group config streams.X
(broker/group/configs.py), which its min and max bound. ``check`` refuses a start whose settings
contradict each other, with the messages of Kafka's GroupCoordinatorConfig.

``group.streams.acceptable.recovery.lag`` stays with the inert settings (broker/inert_settings.py):
Kafka 4.4 passes it on to the members and assigns no warm-up tasks with it (see assignor.py)."""

from __future__ import annotations

from typing import Any

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
    "group.streams.task.offset.interval.ms": (1, None, 60000,
                                              "how often streams group members report their task offsets"),
    "group.streams.min.task.offset.interval.ms": (1, None, 15000, "shortest group.streams.task.offset.interval.ms"),
    "group.streams.assignment.interval.ms": (0, None, 1000, "least time between two target assignments of a "
                                             "streams group (a member heartbeating sooner is told ASSIGNMENT_DELAYED)"),
    "group.streams.min.assignment.interval.ms": (0, None, 0, "shortest group.streams.assignment.interval.ms"),
    "group.streams.max.assignment.interval.ms": (0, None, 15000, "longest group.streams.assignment.interval.ms"),
    "group.streams.num.warmup.replicas": (0, None, 2, "warm-up tasks per task of a streams group (Kafka 4.4.0 "
                                          "assigns none)"),
    "group.streams.max.warmup.replicas": (0, None, 20, "most group.streams.num.warmup.replicas"),
    "group.streams.initial.rebalance.delay.ms": (0, None, 3000, "how long an empty streams group waits for more "
                                                 "members after the first joins before assigning tasks"),
}

# Kafka 4.4's GroupCoordinatorConfig requirements on these, in its order: (a, relation, b)
_REQUIREMENTS = [
    ("max.heartbeat.interval.ms", ">=", "min.heartbeat.interval.ms"),
    ("heartbeat.interval.ms", ">=", "min.heartbeat.interval.ms"),
    ("heartbeat.interval.ms", "<=", "max.heartbeat.interval.ms"),
    ("max.session.timeout.ms", ">=", "min.session.timeout.ms"),
    ("session.timeout.ms", ">=", "min.session.timeout.ms"),
    ("session.timeout.ms", "<=", "max.session.timeout.ms"),
    ("heartbeat.interval.ms", "<", "session.timeout.ms"),
    ("max.assignment.interval.ms", ">=", "min.assignment.interval.ms"),
    ("assignment.interval.ms", ">=", "min.assignment.interval.ms"),
    ("assignment.interval.ms", "<=", "max.assignment.interval.ms"),
    ("num.standby.replicas", "<=", "max.standby.replicas"),
    ("task.offset.interval.ms", ">=", "min.task.offset.interval.ms"),
    ("num.warmup.replicas", "<=", "max.warmup.replicas"),
]
_WORDS = {">=": ("greater than or equal to", int.__ge__), "<=": ("less than or equal to", int.__le__),
          "<": ("less than", int.__lt__)}


def check(config: Any) -> str | None:
    """The first of Kafka's requirements ``config`` breaks, as Kafka words it; None if it keeps them all."""
    for a, relation, b in _REQUIREMENTS:
        words, holds = _WORDS[relation]
        name_a, name_b = f"group.streams.{a}", f"group.streams.{b}"
        if not holds(config[name_a], config[name_b]):
            return f"{name_a} must be {words} {name_b}"
    return None
