"""CreateTopics' bounds on one request, on Weir and on Apache Kafka: more than 10,000 partitions in
all, or more than 10,000 metadata records (a topic record, a partition record per partition, a
config record per config) for the topics that pass validation, refuse the whole request."""

from __future__ import annotations

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic


def outcome(bootstrap: str, topics: list[NewTopic]) -> dict[str, int]:
    """Each topic's error code (0 for a topic that would be created) of a validate-only request."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    codes = {}
    for name, future in admin.create_topics(topics, validate_only=True, request_timeout=60).items():
        try:
            future.result(60)
            codes[name] = 0
        except Exception as exc:  # KafkaException carrying the topic's KafkaError
            codes[name] = exc.args[0].code()
    return codes


def test_a_request_past_ten_thousand_metadata_records_is_refused_whole(any_broker, topic_name):
    at_limit = [NewTopic(f"{topic_name}-{i}", 99, 1) for i in range(100)]  # 100 + 9,900 records
    assert set(outcome(any_broker.bootstrap, at_limit).values()) == {0}
    past_limit = [NewTopic(f"{topic_name}-{i}", 100, 1) for i in range(100)]  # 10,100 records
    assert set(outcome(any_broker.bootstrap, past_limit).values()) == {KafkaError.POLICY_VIOLATION}
    # a config record per config: one more record past the limit
    with_config = at_limit[:-1] + [NewTopic(f"{topic_name}-99", 99, 1, config={"cleanup.policy": "compact"})]
    assert set(outcome(any_broker.bootstrap, with_config).values()) == {KafkaError.POLICY_VIOLATION}
    # the refusal is the whole request's: a topic that fails validation is answered with it too
    invalid = NewTopic(f"{topic_name}-bad", 100, 1, config={"no.such.config": "1"})
    assert set(outcome(any_broker.bootstrap, with_config + [invalid]).values()) == {KafkaError.POLICY_VIOLATION}
    # but it writes no record: at the limit with it, the others pass and it gets its own error
    codes = outcome(any_broker.bootstrap, at_limit + [invalid])
    assert codes.pop(invalid.topic) == KafkaError.INVALID_CONFIG and set(codes.values()) == {0}
