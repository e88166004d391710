"""``weir.run_broker()``: a broker in a child process for synchronous code, with kill -9 and restart."""

import subprocess
import sys
import time

import confluent_kafka
import pytest

import weir
from weir.testing import BrokerStartError, ProcessBroker


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


def test_start_is_woken_by_the_ready_line_not_a_sleeping_poll(monkeypatch):
    def no_sleeping(seconds):
        raise AssertionError(f"start() slept {seconds} s instead of waiting for the ready line")

    broker = ProcessBroker()
    monkeypatch.setattr(time, "sleep", no_sleeping)
    try:
        broker.start()
        monkeypatch.undo()
        assert broker.alive() and any("Weir broker ready on" in line for line in broker.lines)
    finally:
        monkeypatch.undo()
        broker.close()


def test_starting_a_broker_imports_nothing_of_the_broker_or_its_clients_in_the_test_process(tmp_path):
    # The broker imports in its own process (the zygote); the test process builds a command line,
    # forks through the zygote and reads the log: nothing there waits on importing more.
    script = """
import sys
from weir.testing.process import run_broker
with run_broker():
    pass
print(sorted(name for name in sys.modules if name.startswith(("weir.broker", "weir.client", "asyncio"))))
"""
    done = subprocess.run([sys.executable, "-P", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
