"""What a group's subscriptions resolve to: topic names and regular expressions against the topics
that exist, and a hash of that metadata, so that a topic created, deleted or grown changes the
group epoch (Kafka 4.1+'s MetadataHash, KIP-1101).

Regular expressions are RE2's (the ``google-re2`` bindings of the C++ library), as Kafka's RE2/J is
a port of it: the same syntax (``\\p{Greek}``, ``[[:alpha:]]``, ``\\Q..\\E``; no backreferences or
lookarounds), matched against the whole topic name as RE2/J's ``matches()``. An invalid one is
INVALID_REGULAR_EXPRESSION with RE2/J's description of the error (``RE2J_DESCRIPTIONS`` maps RE2's
words to RE2/J's). Kafka resolves a regex in the background
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
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

from weir.protocol.errors import Errors, KafkaError

if TYPE_CHECKING:
    from ...log.manager import LogManager

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
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
    def of(cls, logs: LogManager) -> TopicsView:
        return cls([TopicInfo(name, topic.topic_id, len(topic.partitions))
                    for name, topic in logs.topics.items() if name not in INTERNAL_TOPICS])


#: RE2's words for a syntax error -> RE2/J's (com.google.re2j.Parser), which Kafka's message carries
RE2J_DESCRIPTIONS = {
    "missing )": "missing closing )",
    "unexpected )": "regexp/syntax: internal error",  # RE2/J 1.8's answer to a stray )
    "missing ]": "missing closing ]",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid character class": "invalid character class range",
    "invalid character class range": "invalid character class range",
    "invalid named capture group": "invalid named capture",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid escape sequence": "invalid escape sequence",
}
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # an invalid regex is the client's error, answered; not a line on stderr
_GROUP_NAME = re.compile(r"\(\?P?<([^>]*)>")


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Any:
    """The compiled pattern (RE2's), or INVALID_REGULAR_EXPRESSION with Kafka's message."""
    def invalid(description: str) -> KafkaError:
        return KafkaError(Errors.INVALID_REGULAR_EXPRESSION,
                          f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {description}.")
    if len(pattern) > MAX_REGEX_LENGTH:
        raise invalid(f"longer than {MAX_REGEX_LENGTH}")
    try:
        compiled = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if isinstance(exc.args[0], bytes) else str(exc.args[0])
        words = reason if reason in RE2J_DESCRIPTIONS else reason.split(": ", 1)[0]
        raise invalid(RE2J_DESCRIPTIONS.get(words, words)) from None
    names = _GROUP_NAME.findall(pattern)
    if len(names) != len(set(names)):  # RE2 takes a name twice, RE2/J refuses it
        raise invalid("duplicate capture group name")
    return compiled


def member_topics(names: Iterable[str], regex: str | None, topics: TopicsView) -> set[str]:
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
