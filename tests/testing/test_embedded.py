"""``weir.Broker``: a broker served by the test's own event loop (clients here must be async:
a blocking client would stop the loop that serves it)."""

import errno
import socket

import aiokafka
import pytest

import weir
from weir.broker.config import ConfigError
from weir.client import Consumer, Producer, TopicPartition
from weir.client.admin import Admin, ConfigResource, ResourceType


async def read_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    async with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        values: list[bytes] = []
        while len(values) < count:
            batches = await consumer.getmany(timeout_ms=10000)
            assert batches, f"only {len(values)} of {count} records came back"
            values += [record.value for records in batches.values() for record in records]
    return values


async def test_settings_topics_and_a_round_trip_in_the_callers_loop():
    async with weir.Broker({"num.partitions": 3, "log.cleaner.enable": False}) as broker:
        assert broker.running and broker.data_dir.is_dir()
        async with Admin(broker.bootstrap_servers) as admin:
            configs = await admin.describe_configs([ConfigResource(ResourceType.BROKER, "0")])
            broker_configs = next(iter(configs.values()))
            assert broker_configs["num.partitions"].value == "3"
            assert broker_configs["log.cleaner.enable"].value == "false"
            topic = await broker.create_topic("orders", partitions=2, config={"retention.ms": 60000})
            described = await admin.describe_topics([topic])
            assert len(described[topic].partitions) == 2
            topic_configs = next(iter((await admin.describe_configs([ConfigResource.topic(topic)])).values()))
            assert topic_configs["retention.ms"].value == "60000"
        async with aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            await producer.send_and_wait(topic, b"one", partition=0)
        assert await read_all(broker.bootstrap_servers, topic, 1) == [b"one"]
    assert not broker.data_dir.exists()  # the temporary data directory goes with the broker


async def test_restart_keeps_port_and_data(tmp_path):
    data_dir = tmp_path / "kept"
    broker = weir.Broker(data_dir=data_dir)
    async with broker:
        topic = await broker.create_topic("kept")
        async with Producer(broker.bootstrap_servers) as producer:
            await producer.send_and_wait(topic, b"before")
        bootstrap = broker.bootstrap_servers
        await broker.restart()
        assert broker.bootstrap_servers == bootstrap
        async with Producer(broker.bootstrap_servers) as producer:
            await producer.send_and_wait(topic, b"after")
        assert await read_all(broker.bootstrap_servers, topic, 2) == [b"before", b"after"]
    assert not broker.running
    assert (data_dir / "meta.properties").exists()  # a directory the caller gave is kept


async def test_an_unknown_setting_is_refused_before_anything_serves():
    broker = weir.Broker({"no.such.setting": 1})
    with pytest.raises(ConfigError, match="no.such.setting"):
        await broker.start()
    assert not broker.running
    await broker.close()


async def test_a_given_port_that_is_taken_is_an_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        broker = weir.Broker(port=taken.getsockname()[1])
        with pytest.raises(OSError) as refused:
            await broker.start()
        assert refused.value.errno == errno.EADDRINUSE
        await broker.close()
