"""A streams group's topology and what the broker's topics make of it.

The topology is what the members sent when they joined (Kafka's ``StreamsTopology``): subtopologies,
each reading source topics (names or regexes) and repartition topics, writing repartition topics,
keeping state in changelog topics, with groups of source topics that must be copartitioned.
``configure`` holds it against the broker's topics (Kafka's ``InternalTopicManager.configureTopics``):
how many tasks each subtopology has (the most partitions among its sources), which internal topics
must be created and with how many partitions, and what is wrong: missing source topics and
copartitioned topics whose partition counts differ give the heartbeat statuses Kafka gives.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Kafka's StreamsGroupHeartbeatResponse.Status codes
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5
MISSING_CLIENT_TAGS = 6


@dataclass(frozen=True)
class TopicInfo:
    """An internal topic the topology asks for; partitions 0: as many as its subtopology's tasks."""
    name: str
    partitions: int = 0
    replication_factor: int = -1
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    # each group: indexes into source_topics, source_topic_regex and repartition_source_topics
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]


def _info(wire: Any) -> TopicInfo:
    return TopicInfo(wire.name, wire.partitions, wire.replication_factor,
                     tuple((kv.key, kv.value) for kv in wire.topic_configs or ()))


def from_request(wire: Any) -> Topology:
    return Topology(wire.epoch, tuple(Subtopology(
        s.subtopology_id, tuple(s.source_topics or ()), tuple(s.source_topic_regex or ()),
        tuple(s.repartition_sink_topics or ()), tuple(_info(t) for t in s.repartition_source_topics or ()),
        tuple(_info(t) for t in s.state_changelog_topics or ()),
        tuple((tuple(g.source_topics or ()), tuple(g.source_topic_regex or ()),
               tuple(g.repartition_source_topics or ())) for g in s.copartition_groups or ()))
        for s in wire.subtopologies or ()))


@dataclass
class Configured:
    """The topology held against the topics: tasks per subtopology when the topology is ready."""
    tasks: dict[str, int] = field(default_factory=dict)  # subtopology id -> task count; empty if not ready
    statuses: list[tuple[int, str]] = field(default_factory=list)
    to_create: dict[str, tuple[int, TopicInfo]] = field(default_factory=dict)  # name -> (partitions, info)
    source_partitions: dict[str, dict[str, int]] = field(default_factory=dict)  # subtopology -> topic -> count


def _matches(pattern: str, name: str) -> bool:
    """A regex Python cannot compile matches nothing: the topology then lacks that source (Kafka's
    Java patterns and Python's differ at the edges; a simplification)."""
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error:
        return False


def _sources(sub: Subtopology, topics: Mapping[str, int]) -> tuple[list[str], list[str]]:
    """Source topics of a subtopology that exist (names, then regex matches), and those missing."""
    found: list[str] = []
    missing: list[str] = []
    for name in sub.source_topics:
        (found if name in topics else missing).append(name)
    for pattern in sub.source_topic_regex:
        matched = sorted(name for name in topics if _matches(pattern, name))
        if not matched:
            missing.append(pattern)
        found += matched
    return found, missing


def configure(topology: Topology, topics: Mapping[str, int]) -> Configured:
    """``topics``: every existing topic's partition count."""
    result = Configured()
    missing: list[str] = []
    sources = {}
    for sub in topology.subtopologies:
        found, lost = _sources(sub, topics)
        sources[sub.subtopology_id] = found
        missing += lost
    if missing:
        result.statuses.append((MISSING_SOURCE_TOPICS, f"Source topics {', '.join(sorted(missing))} are missing."))
        return result
    repartition = _repartition_counts(topology, topics, sources)
    mismatched = []
    for sub in topology.subtopologies:
        for names_at, regex_at, repartition_at in sub.copartition_groups:
            counts = {topics[sub.source_topics[i]] for i in names_at}
            counts |= {repartition[sub.repartition_source_topics[i].name] for i in repartition_at}
            for i in regex_at:
                counts |= {topics[name] for name in topics if _matches(sub.source_topic_regex[i], name)}
            if len(counts) > 1:
                mismatched.append(sub.subtopology_id)
    if mismatched:
        result.statuses.append((INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have the same number of "
                                f"partitions in subtopologies {', '.join(mismatched)}"))
        return result
    for sub in topology.subtopologies:
        by_topic = {name: topics[name] for name in sources[sub.subtopology_id]}
        by_topic.update({t.name: repartition[t.name] for t in sub.repartition_source_topics})
        result.source_partitions[sub.subtopology_id] = by_topic
        result.tasks[sub.subtopology_id] = max(by_topic.values(), default=0)
        for info in sub.repartition_source_topics:
            if info.name not in topics:
                result.to_create[info.name] = (repartition[info.name], info)
        for info in sub.state_changelog_topics:
            if info.name not in topics:
                result.to_create[info.name] = (info.partitions or result.tasks[sub.subtopology_id], info)
    if result.to_create:
        result.statuses.append((MISSING_INTERNAL_TOPICS,
                                f"Internal topics are missing: {', '.join(sorted(result.to_create))}"))
        result.tasks = {}
    return result


def _repartition_counts(topology: Topology, topics: Mapping[str, int], sources: dict[str, list[str]]) -> dict[str, int]:
    """Partitions of each repartition topic: as asked, as it exists, else the most partitions among the
    sources of the subtopologies writing to it (Kafka's RepartitionTopics), resolved until nothing changes."""
    counts: dict[str, int] = {}
    for sub in topology.subtopologies:
        for info in sub.repartition_source_topics:
            if info.name in topics:
                counts[info.name] = topics[info.name]
            elif info.partitions > 0:
                counts[info.name] = info.partitions
    changed = True
    while changed:
        changed = False
        for sub in topology.subtopologies:
            upstream = [topics[name] for name in sources[sub.subtopology_id]]
            upstream += [counts[t.name] for t in sub.repartition_source_topics if t.name in counts]
            if not upstream:
                continue
            for sink in sub.repartition_sink_topics:
                if sink not in counts:
                    counts[sink] = max(upstream)
                    changed = True
    for sub in topology.subtopologies:  # a repartition topic nobody writes to: one partition
        for info in sub.repartition_source_topics:
            counts.setdefault(info.name, 1)
    return counts
