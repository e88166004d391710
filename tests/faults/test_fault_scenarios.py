"""Issue 35's bar: faults injected into a real broker process (``weir.run_broker()``) through its
control channel, seen by confluent-kafka (librdkafka) as it would see them from Apache Kafka."""

from __future__ import annotations

import itertools
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

import weir
from weir.testing.faults import FaultError
from tests.support.waiting import wait_until

_topics = itertools.count()


@pytest.fixture(scope="module")
def broker():
    with weir.run_broker() as running:
        yield running


@pytest.fixture
def topic(broker):
    name = broker.create_topic(f"faults-{next(_topics)}")
    yield name
    broker.resume()
    broker.disk_ok()
    broker.faults.clear()


def read_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, 0)])
    values: list[bytes] = []
    try:
        def more() -> bool:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                values.append(message.value())
            return len(values) >= expected
        wait_until(more, lambda: f"{expected} records, read {len(values)}", timeout=60, interval=0)
        extra = consumer.consume(num_messages=100, timeout=1.0)  # anything doubled would follow
        values += [m.value() for m in extra if not m.error()]
    finally:
        consumer.close()
    return values


def deliver(producer: Producer, topic: str, value: bytes) -> KafkaError | None:
    outcome: list[KafkaError | None] = []
    producer.produce(topic, value, partition=0, on_delivery=lambda error, _message: outcome.append(error))
    wait_until(lambda: producer.poll(0.1) or outcome, "a delivery report", timeout=60, interval=0)
    return outcome[0]


def test_three_not_leader_answers_are_retried_with_nothing_lost_or_doubled(broker, topic):
    broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", times=3)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                         "linger.ms": 5, "retry.backoff.ms": 50})
    errors: list[KafkaError] = []
    sent = [f"record-{i}".encode() for i in range(200)]
    for value in sent:
        producer.produce(topic, value, partition=0,
                         on_delivery=lambda error, _message: error is not None and errors.append(error))
    assert producer.flush(60) == 0
    assert errors == []
    assert broker.faults.fired() == {"Produce": 3}
    assert read_all(broker.bootstrap_servers, topic, len(sent)) == sent  # each once, in order


def test_an_injected_authorization_failure_reaches_init_transactions(broker, topic):
    broker.faults.error("InitProducerId", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"tx-{topic}"})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(30)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert broker.faults.fired() == {"InitProducerId": 1}


def test_a_one_second_delay_holds_exactly_one_produce_answer(broker, topic):
    held = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    other = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    assert deliver(held, topic, b"warm-up") is None and deliver(other, topic, b"warm-up") is None
    broker.faults.delay("Produce", 1.0)
    started = time.monotonic()
    outcome: list[KafkaError | None] = []
    held.produce(topic, b"held", partition=0, on_delivery=lambda error, _message: outcome.append(error))
    wait_until(lambda: held.poll(0) == 0 and not broker.faults.armed(), "the delayed Produce to arrive")
    other_started = time.monotonic()
    assert deliver(other, topic, b"other connection") is None
    other_took = time.monotonic() - other_started
    wait_until(lambda: held.poll(0.1) or outcome, "the held answer", timeout=60, interval=0)
    held_took = time.monotonic() - started
    after = time.monotonic()
    assert deliver(held, topic, b"next") is None
    next_took = time.monotonic() - after
    assert outcome == [None]
    assert held_took >= 1.0, held_took
    assert other_took < 1.0 and next_took < 1.0, (other_took, next_took)  # one answer held, no other
    assert broker.faults.fired() == {"Produce": 1}


def test_a_paused_broker_times_a_producer_out_and_serves_it_after_resume(broker, topic):
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0,
                         "request.timeout.ms": 1000, "message.timeout.ms": 2000})
    assert deliver(producer, topic, b"before") is None
    broker.pause()
    error = deliver(producer, topic, b"while paused")
    assert error is not None and error.code() in (KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT), error
    broker.resume()
    assert deliver(producer, topic, b"after") is None


def test_a_full_disk_fails_produce_with_storage_error_until_it_is_ok(broker, topic):
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, "retries": 0})
    assert deliver(producer, topic, b"before") is None
    broker.disk_full()
    error = deliver(producer, topic, b"on a full disk")
    assert error is not None and error.code() == KafkaError.KAFKA_STORAGE_ERROR, error
    assert read_all(broker.bootstrap_servers, topic, 1) == [b"before"]  # reads go on
    broker.disk_ok()
    assert deliver(producer, topic, b"after") is None
    assert read_all(broker.bootstrap_servers, topic, 2) == [b"before", b"after"]
    assert broker.faults.fired() == {}  # the real write path answered, no injected answer


def test_bad_use_raises_in_the_test(broker):
    with pytest.raises(FaultError, match="never answers Produce with GROUP_ID_NOT_FOUND"):
        broker.faults.error("Produce", "GROUP_ID_NOT_FOUND")
    with pytest.raises(FaultError, match="unknown API"):
        broker.faults.delay("Produse", 1)
    # and the broker refuses it too, for callers in other languages
    import json
    import urllib.error
    import urllib.request
    control = broker.faults
    request = urllib.request.Request(f"{control.url}/faults/error", method="POST",
                                     data=json.dumps({"api": "Produce", "code": "NOPE"}).encode(),
                                     headers={"Authorization": f"Bearer {control.token}"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 400 and "unknown Kafka error 'NOPE'" in json.loads(refused.value.read())["error"]
    unauthenticated = urllib.request.Request(f"{control.url}/faults/pause", method="POST", data=b"{}")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(unauthenticated, timeout=30)
    assert refused.value.code == 401
    assert broker.faults.state()["paused"] is False
