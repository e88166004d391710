"""The sink hands every ``kafka.*`` producer option to the client's Producer, as Spark's Kafka sink hands
them to the Java producer (before the sink ran on the client, compression, linger and acks were parsed
and dropped)."""

import logging

import pytest

from weir.client import Producer
from weir.pipeline import options as opt
from weir.protocol.compression import Compression

SPARK_STYLE = {"kafka.bootstrap.servers": "127.0.0.1:1", "kafka.compression.type": "zstd", "kafka.linger.ms": "25",
               "kafka.acks": "all", "kafka.batch.size": "65536", "kafka.buffer.memory": "1048576",
               "kafka.max.in.flight.requests.per.connection": "3", "kafka.enable.idempotence": "true",
               "kafka.delivery.timeout.ms": "90000", "kafka.request.timeout.ms": "20000",
               "kafka.retry.backoff.ms": "50", "kafka.max.request.size": "2097152", "kafka.client.id": "sink",
               "kafka.max.block.ms": "30000", "kafka.transaction.timeout.ms": "120000"}


def test_every_producer_option_reaches_the_producer_typed():
    settings = opt.producer_settings(SPARK_STYLE)
    assert settings == {"compression_type": "zstd", "linger_ms": 25, "acks": "all", "batch_size": 65536,
                        "buffer_memory": 1048576, "max_in_flight": 3, "enable_idempotence": True,
                        "delivery_timeout_ms": 90000, "request_timeout_ms": 20000, "retry_backoff_ms": 50,
                        "max_request_size": 2097152, "client_id": "sink", "max_block_ms": 30000,
                        "transaction_timeout_ms": 120000}
    producer = Producer("127.0.0.1:1", transactional_id="t", **settings)  # no connection until start()
    assert producer.accumulator.compression is Compression.ZSTD and producer.accumulator.linger == 0.025
    assert producer.accumulator.batch_size == 65536 and producer.sender.max_in_flight == 3
    assert producer.transaction_manager.transaction_timeout_ms == 120000


def test_an_option_the_producer_cannot_honour_is_refused_or_named():
    with pytest.raises(ValueError, match="enable_idempotence requires acks='all'"):
        Producer("127.0.0.1:1", **opt.producer_settings({"kafka.acks": "1"}))
    assert Producer("127.0.0.1:1", **opt.producer_settings({"kafka.acks": "1", "kafka.enable.idempotence": "false"}))
    for refused in ("kafka.value.serializer", "kafka.transactional.id", "kafka.interceptor.classes"):
        with pytest.raises(opt.OptionError, match="is not supported"):
            opt.producer_settings({refused: "x"})


def test_a_java_producer_setting_the_client_lacks_is_ignored_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        assert opt.producer_settings({"kafka.send.buffer.bytes": "131072"}) == {}
    assert "send.buffer.bytes" in caplog.text
