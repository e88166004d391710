"""CreateTopics' bounds on one request, on Weir and on Apache Kafka: more than 10,000 partitions in
all, or more than 10,000 metadata records (a topic record, a partition record per partition, a
config record per config) for the topics that pass validation, refuse the whole request."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess


@pytest.fixture(params=["weir", "kafka"])
def broker(request, tmp_path):
    """Kafka, or a Weir of its own: the session's shared Weir holds many partitions already, and its
    max.broker.partitions (KIP-578, from the descriptor limit) would refuse 9,900 more first."""
    if request.param == "kafka":
        return request.getfixturevalue("kafka_broker")
    weir = BrokerProcess(tmp_path / "data", overrides={"max.broker.partitions": "100000"}).start()
    request.addfinalizer(weir.stop)
    return weir


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


def test_a_request_past_ten_thousand_metadata_records_is_refused_whole(broker, topic_name):
    at_limit = [NewTopic(f"{topic_name}-{i}", 99, 1) for i in range(100)]  # 100 + 9,900 records
    assert set(outcome(broker.bootstrap, at_limit).values()) == {0}
    past_limit = [NewTopic(f"{topic_name}-{i}", 100, 1) for i in range(100)]  # 10,100 records
    assert set(outcome(broker.bootstrap, past_limit).values()) == {KafkaError.POLICY_VIOLATION}
    # a config record per config: one more record past the limit
    with_config = at_limit[:-1] + [NewTopic(f"{topic_name}-99", 99, 1, config={"cleanup.policy": "compact"})]
    assert set(outcome(broker.bootstrap, with_config).values()) == {KafkaError.POLICY_VIOLATION}
    # the refusal is the whole request's: a topic that fails validation is answered with it too
    invalid = NewTopic(f"{topic_name}-bad", 100, 1, config={"no.such.config": "1"})
    assert set(outcome(broker.bootstrap, with_config + [invalid]).values()) == {KafkaError.POLICY_VIOLATION}
    # but it writes no record: at the limit with it, the others pass and it gets its own error
    codes = outcome(broker.bootstrap, at_limit + [invalid])
    assert codes.pop(invalid.topic) == KafkaError.INVALID_CONFIG and set(codes.values()) == {0}
