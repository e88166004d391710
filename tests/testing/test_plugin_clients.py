"""The plugin's fixtures (loaded here through the pytest11 entry point, as in any user's venv)
driven by each client a user may have: confluent-kafka, aiokafka, kafka-python and ours."""

import asyncio

import aiokafka
import confluent_kafka
import kafka
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from weir.client import Consumer, Producer, TopicPartition
from weir.client.errors import BrokerResponseError
from weir.testing import ProcessBroker

INVALID_TRANSACTION_TIMEOUT = 50


def test_the_fixture_is_the_plugins_and_makes_topics(weir_broker, weir_topic):
    assert isinstance(weir_broker, ProcessBroker)  # not a same-named fixture of the project's conftest
    topic = weir_topic(partitions=3, config={"cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": weir_broker.bootstrap_servers})
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 3
    described = admin.describe_configs([ConfigResource("topic", topic)])
    configs = next(iter(described.values())).result(timeout=10)
    assert configs["cleanup.policy"].value == "compact"
    assert weir_topic() != weir_topic()  # unique names within a test


def test_confluent_kafka_transaction(weir_broker, weir_topic):
    topic = weir_topic(partitions=2)
    producer = confluent_kafka.Producer({"bootstrap.servers": weir_broker.bootstrap_servers,
                                         "transactional.id": f"{topic}-tx"})
    producer.init_transactions(10)
    producer.begin_transaction()
    for number in range(10):
        producer.produce(topic, str(number).encode(), key=str(number).encode())
    producer.commit_transaction(10)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": weir_broker.bootstrap_servers, "group.id": topic,
                                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    values = []
    try:
        for message in iter(lambda: consumer.poll(10), None):
            assert message.error() is None, message.error()
            values.append(int(message.value()))
            if len(values) == 10:
                break
    finally:
        consumer.close()
    assert sorted(values) == list(range(10))


def test_kafka_python(weir_broker, weir_topic):
    topic = weir_topic()
    producer = kafka.KafkaProducer(bootstrap_servers=weir_broker.bootstrap_servers)
    for number in range(5):
        producer.send(topic, str(number).encode())
    producer.flush(10)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=weir_broker.bootstrap_servers,
                                   auto_offset_reset="earliest", consumer_timeout_ms=10000)
    values = [int(message.value) for _, message in zip(range(5), consumer, strict=False)]
    consumer.close()
    assert values == list(range(5))


async def test_aiokafka_under_pytest_asyncio(weir_broker, weir_topic):
    topic = weir_topic()
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=weir_broker.bootstrap_servers) as producer:
        await producer.send_and_wait(topic, b"hello")
    async with aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=weir_broker.bootstrap_servers,
                                         auto_offset_reset="earliest") as consumer:
        message = await asyncio.wait_for(consumer.getone(), 10)
    assert message.value == b"hello"


async def test_weir_client_under_pytest_asyncio(weir_broker, weir_topic):
    topic = weir_topic(partitions=1)
    async with Producer(weir_broker.bootstrap_servers, transactional_id=f"{topic}-tx") as producer:
        await producer.init_transactions()
        async with producer.transaction():
            await producer.send(topic, b"committed")
    async with Consumer(bootstrap_servers=weir_broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        batches = await consumer.getmany(timeout_ms=10000)
    assert [record.value for records in batches.values() for record in records] == [b"committed"]


@pytest.mark.weir(settings={"transaction.max.timeout.ms": 1000})
async def test_marker_settings_reach_the_broker(weir_broker, weir_topic):
    """Kafka refuses InitProducerId with a transaction timeout above transaction.max.timeout.ms."""
    assert weir_broker.settings == {"transaction.max.timeout.ms": "1000"}
    topic = weir_topic()
    async with Producer(weir_broker.bootstrap_servers, transactional_id=f"{topic}-short",
                        transaction_timeout_ms=1000) as producer:
        await producer.init_transactions()
    with pytest.raises(BrokerResponseError) as refused:
        async with Producer(weir_broker.bootstrap_servers, transactional_id=f"{topic}-long",
                            transaction_timeout_ms=5000) as producer:
            await producer.init_transactions()
    assert refused.value.code == INVALID_TRANSACTION_TIMEOUT
