"""Short, real client sessions whose request frames become the fuzz corpus.

Each library does what applications and admin tools do (topics, idempotent and
transactional produce, group consumption with commits, group and offset
admin), so the recorded frames are the shapes and versions real clients send.
"""

from __future__ import annotations

import asyncio
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic,
                                  OffsetSpec)
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import ConfigResource as KafkaConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.admin import NewTopic as KafkaNewTopic

DEADLINE_S = 30


def _consume(consumer, count: int) -> int:
    seen = 0
    deadline = time.monotonic() + DEADLINE_S
    while seen < count and time.monotonic() < deadline:
        for message in consumer.consume(100, timeout=0.2):
            if message.error():
                raise KafkaException(message.error())
            seen += 1
    return seen


def confluent_session(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name in (topic, topic + "-doomed"):
        admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])[name].result(10)
    admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.type": "lz4",
                         "linger.ms": 5})
    for i in range(20):
        producer.produce(topic, key=b"k%d" % i, value=b"confluent-%d" % i, partition=i % 2)
    assert producer.flush(20) == 0

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fuzz-confluent", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    assert _consume(consumer, 20) == 20
    consumer.commit(asynchronous=False)
    transactional = Producer({"bootstrap.servers": bootstrap, "transactional.id": "fuzz-confluent-txn"})
    transactional.init_transactions(20)
    transactional.begin_transaction()
    transactional.produce(topic, value=b"in-txn", partition=0)
    transactional.send_offsets_to_transaction([TopicPartition(topic, 0, 5)], consumer.consumer_group_metadata(), 20)
    transactional.commit_transaction(20)
    transactional.begin_transaction()
    transactional.produce(topic, value=b"aborted", partition=1)
    transactional.abort_transaction(20)
    consumer.offsets_for_times([TopicPartition(topic, 0, 0)], timeout=10)
    consumer.close()

    admin.list_consumer_groups().result(10)
    admin.describe_consumer_groups(["fuzz-confluent"])["fuzz-confluent"].result(10)
    admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("fuzz-confluent")])["fuzz-confluent"].result(10)
    admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()})[TopicPartition(topic, 0)].result(10)
    admin.delete_consumer_groups(["fuzz-confluent"])["fuzz-confluent"].result(10)
    # the admin APIs Kafka's tools and Streams need
    admin.describe_cluster(include_authorized_operations=True, request_timeout=10).result(10)
    admin.create_partitions([NewPartitions(topic + "-doomed", 3)])[topic + "-doomed"].result(10)
    admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic + "-doomed", incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])])[
        ConfigResource(ConfigResource.Type.TOPIC, topic + "-doomed")].result(10)
    admin.alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic + "-doomed",
                                        set_config={"segment.bytes": "1048576"})])[
        ConfigResource(ConfigResource.Type.TOPIC, topic + "-doomed")].result(10)
    admin.delete_records([TopicPartition(topic, 0, 1)])[TopicPartition(topic, 0, 1)].result(10)
    admin.delete_topics([topic + "-doomed"])[topic + "-doomed"].result(10)


def kafka_python_session(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([KafkaNewTopic(topic + "-kp", num_partitions=1, replication_factor=1)])
        admin.describe_configs([KafkaConfigResource(ConfigResourceType.TOPIC, topic)])
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="gzip")
        for i in range(10):
            producer.send(topic, value=b"kafka-python-%d" % i, partition=i % 2)
        producer.flush(20)
        producer.close()
        consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="fuzz-kp", auto_offset_reset="earliest",
                                 enable_auto_commit=False, consumer_timeout_ms=10_000)
        for seen, _message in enumerate(consumer, 1):
            if seen >= 10:
                break
        consumer.commit()
        consumer.close()
        admin.list_groups()
        admin.describe_groups(["fuzz-kp"])
        admin.list_group_offsets("fuzz-kp")
        admin.delete_group_offsets("fuzz-kp", [KafkaTopicPartition(topic, 0)])
        admin.delete_groups(["fuzz-kp"])
        admin.delete_topics([topic + "-kp"])
        admin.describe_cluster()  # DescribeCluster (librdkafka's describe_cluster uses Metadata)
        admin.list_transactions()
        admin.describe_transactions(["fuzz-confluent-txn"])
        admin.describe_producers([KafkaTopicPartition(topic, 0)])
    finally:
        admin.close()


async def aiokafka_session(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="fuzz-aiokafka-txn")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(topic, b"aiokafka-txn", partition=1)
            await producer.send_offsets_to_transaction({AioTopicPartition(topic, 1): 3}, "fuzz-aio")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="fuzz-aio", auto_offset_reset="earliest",
                                enable_auto_commit=False, isolation_level="read_committed")
    await consumer.start()
    try:
        async with asyncio.timeout(DEADLINE_S):
            got = 0
            while got < 5:
                got += sum(len(batch) for batch in (await consumer.getmany(timeout_ms=200)).values())
        await consumer.commit()
    finally:
        await consumer.stop()


def record_all(bootstrap: str, topic: str) -> None:
    confluent_session(bootstrap, topic)
    kafka_python_session(bootstrap, topic)
    asyncio.run(aiokafka_session(bootstrap, topic))
