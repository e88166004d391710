"""Fault injection on ``weir.Broker`` (in-process, our own client), and the settings that keep it
off and unreachable unless a broker is started for tests."""

from __future__ import annotations

import time

import pytest

import weir
from weir.broker.config import BrokerConfig, ConfigError
from weir.broker.context import BrokerContext
from weir.broker.lifecycle import RunningBroker
from weir.client import Producer
from weir.client.errors import KafkaTimeoutError


async def test_the_embedded_broker_answers_injected_errors_and_pauses():
    async with weir.Broker() as broker:
        topic = await broker.create_topic("embedded-faults", partitions=2)
        broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", times=2, topic=topic, partition=1)
        async with Producer(broker.bootstrap_servers, retry_backoff_ms=20) as producer:
            sent = [await producer.send_and_wait(topic, b"v%d" % i, partition=i % 2) for i in range(6)]
            assert [(m.partition, m.offset) for m in sent] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
            assert broker.faults.fired() == {"Produce": 2}
            broker.pause()
            started = time.monotonic()
            with pytest.raises(KafkaTimeoutError):
                async with Producer(broker.bootstrap_servers, request_timeout_ms=500,
                                    delivery_timeout_ms=1000) as stalled:
                    await stalled.send_and_wait(topic, b"paused", partition=0)
            assert time.monotonic() - started >= 0.5
            broker.resume()
            assert (await producer.send_and_wait(topic, b"after", partition=0)).offset >= 3


def running_broker(tmp_path, **settings: object) -> RunningBroker:
    config = BrokerConfig({name: str(value) for name, value in settings.items()})
    return RunningBroker(BrokerContext(config, tmp_path / "data", "127.0.0.1", 0))


def test_a_normal_start_has_no_faults(tmp_path):
    running = running_broker(tmp_path)
    assert running.faults is None and running.faults_listener is None
    assert running.server.dispatcher.faults is None


@pytest.mark.parametrize("settings, refusal", [
    ({"weir.faults.listener": "127.0.0.1:0"}, "needs weir.faults.enable=true"),
    ({"weir.faults.enable": "true", "weir.faults.listener": "0.0.0.0:0"}, "needs weir.faults.token"),
    ({"weir.faults.enable": "true", "weir.faults.listener": "127.0.0.1:0",
      "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
      "super.users": "User:admin"}, "needs weir.faults.token"),
])
def test_the_control_channel_is_refused_where_it_would_be_open(tmp_path, settings, refusal):
    with pytest.raises(ConfigError, match=refusal):
        running_broker(tmp_path, **settings)

