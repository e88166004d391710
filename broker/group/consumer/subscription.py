"""What a group's subscriptions resolve to: topic names and regular expressions against the topics
that exist, and a hash of that metadata, so that a topic created, deleted or grown changes the
group epoch (Kafka 4.1+'s MetadataHash, KIP-1101).

Regular expressions use Python's ``re`` with a full match, which agrees with RE2/J (Kafka's
engine) on the patterns consumers use (``topic-.*``, ``(a|b)-[0-9]+``); RE2/J's few extras
(``\\p{Greek}``-style classes) are refused as invalid. Kafka resolves a regex in the background
and stores the result in a record; Weir resolves it whenever it computes an assignment, which
is cheap with a broker's few thousand topics at most.
The hash is BLAKE2b over (name, topic id, partition count) of each subscribed topic; Kafka's is
Murmur3 over the same and racks: the value differs, its use (changed or not) is the same.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

from weir.protocol.errors import Errors, KafkaError

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
MAX_REGEX_LENGTH = 10000  # a bound on what one heartbeat may make us compile


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: bytes
    partitions: int


class TopicsView:
    """The broker's topics by name and by id, as the group coordinator needs them."""

    def __init__(self, topics: list[TopicInfo]):
        self.by_name = {t.name: t for t in topics}
        self.by_id = {t.topic_id: t for t in topics}

    @classmethod
    def of(cls, logs) -> TopicsView:
        return cls([TopicInfo(name, topic.topic_id, len(topic.partitions))
                    for name, topic in logs.topics.items() if name not in INTERNAL_TOPICS])


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> re.Pattern:
    if len(pattern) > MAX_REGEX_LENGTH:
        raise KafkaError(Errors.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex is not a valid regular "
                                                            f"expression: longer than {MAX_REGEX_LENGTH}.")
    try:
        return re.compile(pattern)
    except re.error as exc:  # Kafka's words; the reason is Python's, not RE2/J's
        raise KafkaError(Errors.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {exc.msg}.") from None


def member_topics(names, regex: str | None, topics: TopicsView) -> set[str]:
    """Existing topic names one member subscribes to."""
    found = {name for name in names if name in topics.by_name}
    if regex:
        matcher = compile_regex(regex)
        found.update(name for name in topics.by_name if matcher.fullmatch(name))
    return found


def metadata_hash(topic_names: set[str], topics: TopicsView) -> int:
    digest = hashlib.blake2b(digest_size=8)
    for name in sorted(topic_names):
        topic = topics.by_name[name]
        digest.update(name.encode())
        digest.update(topic.topic_id)
        digest.update(topic.partitions.to_bytes(4, "big"))
    return int.from_bytes(digest.digest(), "big", signed=True) if topic_names else 0
