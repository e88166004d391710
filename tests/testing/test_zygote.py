"""Warm broker children (weir/testing/zygote.py): forked by a process that imported the broker once,
and in every way a test can see the same child as ``python -m weir.broker``: its own process, its
log on our pipe, the settings, environment, directory and descriptor limit it was given, kill -9,
SIGTERM and its exit codes. A child the fork cannot make faithfully is started cold."""

import os
from datetime import datetime
import signal
from pathlib import Path
from zoneinfo import ZoneInfo

import confluent_kafka
import pytest

from weir.testing import BrokerStartError, ProcessBroker
from weir.testing import process as process_module
from weir.testing.zygote import ForkedChild


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


@pytest.fixture(autouse=True)
def zygote(monkeypatch):
    monkeypatch.delenv("WEIR_BROKER_ZYGOTE", raising=False)
    started = process_module.start_zygote()  # for this process's environment (Spark's tests change it)
    assert started is not None
    return started


def round_trip(bootstrap: str, topic: str, group: str) -> bytes:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    producer.produce(topic, b"warm")
    assert producer.flush(15) == 0
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        message = consumer.poll(15)
        assert message is not None and message.error() is None, message
        return message.value()
    finally:
        consumer.close()


def test_a_warm_child_serves_is_killed_and_restarts_with_its_data(tmp_path, zygote):
    with ProcessBroker({"num.partitions": 3}, data_dir=tmp_path / "data", faults=False,
                       open_files_limit=4096) as broker:
        child = broker.process
        assert isinstance(child, ForkedChild)
        assert parent_of(child.pid) == zygote.process.pid
        assert "Max open files            4096                 4096" in Path(f"/proc/{child.pid}/limits").read_text()
        assert Path(f"/proc/{child.pid}/cwd").resolve() == Path.cwd().resolve()
        topic = broker.create_topic("warm")
        assert round_trip(broker.bootstrap_servers, topic, "before") == b"warm"
        assert broker.log_contains("Weir broker ready on")

        broker.kill()
        assert child.returncode == -signal.SIGKILL
        broker.start()
        assert broker.process is not child and broker.process.pid != child.pid
        assert round_trip(broker.bootstrap_servers, topic, "after") == b"warm"  # recovered from the same data

        assert broker.stop() == 0  # SIGTERM: a clean shutdown
        assert broker.log_contains("stopped cleanly")


def test_a_configuration_error_exits_2_with_its_message(tmp_path):
    broker = ProcessBroker({"num.partitions": "many"}, data_dir=tmp_path / "data", faults=False)
    with pytest.raises(BrokerStartError, match="num.partitions"):
        broker.start()
    assert isinstance(broker.process, ForkedChild)
    assert broker.process.returncode == 2


def test_the_environment_reaches_the_child(tmp_path):
    """TZ: the child's log stamps local times of its own zone (Chatham's quarter-hour offset)."""
    zone = ZoneInfo("Pacific/Chatham")
    before = datetime.now(zone).replace(tzinfo=None, microsecond=0)
    with ProcessBroker(data_dir=tmp_path / "data", faults=False, env={"TZ": "Pacific/Chatham"}) as broker:
        assert isinstance(broker.process, ForkedChild)
        ready = next(line for line in broker.lines if "Weir broker ready on" in line)
        stamped = datetime.strptime(ready[:19], "%Y-%m-%d %H:%M:%S")
        after = datetime.now(zone).replace(tzinfo=None)
        assert before <= stamped <= after, (before, ready, after)


def test_what_the_broker_reads_at_import_makes_a_cold_child(tmp_path):
    boot_id = tmp_path / "boot_id"
    boot_id.write_text("8a1d0c54-2a3f-4b7e-9b1a-0f6f2c1d9e77\n")
    with ProcessBroker(data_dir=tmp_path / "data", faults=False, env={"WEIR_BOOT_ID_FILE": str(boot_id)}) as broker:
        assert not isinstance(broker.process, ForkedChild)
        assert parent_of(broker.pid) == os.getpid()


def test_a_changed_environment_gets_a_zygote_of_its_own(tmp_path, zygote, monkeypatch):
    """Spark's tests put the repository on PYTHONPATH for their workers: later brokers must still
    start warm, from a zygote started with that environment (PYTHONPATH decides what is imported)."""
    before = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    other = process_module.start_zygote()
    assert other is not None and other is not zygote and other.alive()
    with ProcessBroker(data_dir=tmp_path / "data", faults=False) as broker:
        assert isinstance(broker.process, ForkedChild)
        assert parent_of(broker.pid) == other.process.pid
    if before is None:
        monkeypatch.delenv("PYTHONPATH")
    else:
        monkeypatch.setenv("PYTHONPATH", before)
    assert process_module.start_zygote() is zygote  # the first environment's zygote serves it again
