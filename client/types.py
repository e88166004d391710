"""The named values the client hands out and takes: never positional tuples."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic."""
    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    """A committed offset (the next record to read), with the committer's metadata string and the
    leader epoch of the record before it (-1: unknown)."""
    offset: int
    metadata: str = ""
    leader_epoch: int = -1


class RecordMetadata(NamedTuple):
    """Where an acknowledged record landed. ``timestamp`` is the broker's append time
    on LogAppendTime topics, else the record's own. A NamedTuple (immutable, named
    fields) because one is built per acknowledged record: less than half a frozen
    dataclass's cost."""
    topic: str
    partition: int
    offset: int
    timestamp: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(slots=True)
class ConsumerRecord:
    """A record as the consumer returns it. ``timestamp_type`` is 0 (CreateTime) or 1 (LogAppendTime);
    ``headers`` in the order they were written."""
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    leader_epoch: int = -1
