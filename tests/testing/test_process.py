"""``weir.run_broker()``: a broker in a child process for synchronous code, with kill -9 and restart."""

import confluent_kafka
import pytest

import weir
from weir.testing import BrokerStartError


def consume(bootstrap: str, topic: str, count: int, group: str) -> list[bytes]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                                         "enable.partition.eof": True})
    consumer.subscribe([topic])
    values = []
    try:
        while True:
            message = consumer.poll(15)
            assert message is not None, f"nothing more after {len(values)} records"
            if message.error() and message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                if len(values) >= count:
                    return values
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
    finally:
        consumer.close()


def test_kill_minus_nine_mid_transaction_then_restart():
    with weir.run_broker({"transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}) as broker:
        topic = broker.create_topic("payments")
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers,
                                             "transactional.id": "payments-tx", "transaction.timeout.ms": 2000})
        producer.init_transactions(10)
        producer.begin_transaction()
        for number in range(20):
            producer.produce(topic, b"committed-%d" % number)
        producer.commit_transaction(10)
        producer.begin_transaction()
        for number in range(5):
            producer.produce(topic, b"open-%d" % number)
        producer.flush(10)  # written to the log, transaction still open
        bootstrap, pid = broker.bootstrap_servers, broker.pid

        broker.kill()
        assert not broker.alive()
        assert "shutting down" not in broker.log  # no clean shutdown: a crash
        broker.restart()
        assert broker.bootstrap_servers == bootstrap and broker.pid != pid
        # the open transaction times out after the restart and is aborted; the committed one is intact
        assert consume(bootstrap, topic, 20, "after-restart") == [b"committed-%d" % n for n in range(20)]
        # the crashed producer's transactional id can start again once its old transaction is done with
        successor = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": "payments-tx"})
        successor.init_transactions(15)
        del producer


def test_clean_stop_and_removed_temporary_directory():
    with weir.run_broker() as broker:
        broker.create_topic("t")
        data_dir = broker.data_dir
        assert (data_dir / "t-0").is_dir()
    assert "stopped cleanly" in broker.log
    assert not data_dir.exists()


def test_a_given_data_directory_is_kept(tmp_path):
    with weir.run_broker(data_dir=tmp_path / "data") as broker:
        broker.create_topic("kept")
    assert (tmp_path / "data" / "kept-0").is_dir()


def test_a_bad_setting_fails_start_with_the_brokers_message():
    with pytest.raises(BrokerStartError, match="log.segment.bytes"):
        with weir.run_broker({"log.segment.bytes": "lots"}):
            pass
