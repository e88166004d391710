"""Creating topics and adding partitions is all-or-nothing, in the process and across a crash."""

import json
import logging

import pytest

from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.log.manager import LogManager
from weir.broker.log.topic_records import METADATA_FILE
from weir.protocol.errors import Errors, KafkaError


def manager(data_dir, **settings):
    logs = LogManager(data_dir, BrokerConfig({k: str(v) for k, v in settings.items()}), ManualClock())
    logs.open()
    return logs


def partition_dirs(data_dir, topic):
    return sorted(p.name for p in data_dir.iterdir() if p.is_dir() and p.name.startswith(topic + "-"))


def refused(call, *args) -> KafkaError:
    with pytest.raises(KafkaError) as err:
        call(*args)
    return err.value


def test_a_failure_midway_leaves_nothing(tmp_path):
    logs = manager(tmp_path)
    (tmp_path / "orders-7").write_text("not ours")  # partition 7 cannot be made
    error = refused(logs.create_topic, "orders", 10)
    assert error.error == Errors.KAFKA_STORAGE_ERROR
    assert "orders" not in logs.topics
    assert partition_dirs(tmp_path, "orders") == [], "partitions 0-6 were removed"
    assert (tmp_path / "orders-7").read_text() == "not ours", "what creation did not make is left alone"
    assert "orders" not in manager(tmp_path).topics


def test_a_crash_midway_leaves_nothing_a_restart_loads(tmp_path, caplog):
    logs = manager(tmp_path)
    logs.create_topic("kept", 2)
    topic_id = logs.topics["kept"].topic_id.hex()
    for index in range(3):  # what a crash before the topic record leaves behind
        directory = tmp_path / f"half-{index}"
        directory.mkdir()
        (directory / METADATA_FILE).write_text(json.dumps({"version": 0, "topic_id": topic_id, "configs": {}}))
    (tmp_path / "half-3").mkdir()  # crashed between mkdir and the metadata
    (tmp_path / "backup-2024").mkdir()
    (tmp_path / "backup-2024" / "notes.txt").write_text("an operator's")
    with caplog.at_level(logging.WARNING):
        restarted = manager(tmp_path)
    assert sorted(restarted.topics) == ["kept"] and len(restarted.topics["kept"].partitions) == 2
    assert partition_dirs(tmp_path, "half") == []
    assert "removing partition directory" in caplog.text and "half-0" in caplog.text
    assert (tmp_path / "backup-2024" / "notes.txt").exists(), "a directory Weir did not make is kept"


def test_a_data_directory_from_before_topic_records_is_adopted(tmp_path):
    logs = manager(tmp_path)
    logs.create_topic("old", 3, {"retention.ms": 1234})
    for partition in logs.topics["old"].partitions:
        partition.close()
    for record in (tmp_path / "topics").iterdir():
        record.unlink()
    (tmp_path / "topics").rmdir()
    adopted = manager(tmp_path)
    assert len(adopted.topics["old"].partitions) == 3
    assert adopted.topics["old"].overrides == {"retention.ms": 1234}
    assert (tmp_path / "topics" / "old.json").exists()


def test_delete_removes_the_record_first(tmp_path):
    import asyncio
    logs = manager(tmp_path)
    logs.create_topic("gone", 2)
    asyncio.run(logs.delete_topic("gone"))
    assert not (tmp_path / "topics" / "gone.json").exists() and partition_dirs(tmp_path, "gone") == []
    assert "gone" not in manager(tmp_path).topics


def test_request_and_broker_partition_limits(tmp_path):
    logs = manager(tmp_path, **{"max.broker.partitions": 5})
    error = refused(logs.create_topic, "huge", 100_000)
    assert (error.error, error.message) == (Errors.POLICY_VIOLATION,
                                            "Excessively large number of partitions per request.")
    logs.create_topic("four", 4)
    assert refused(logs.create_topic, "two", 2).error == Errors.POLICY_VIOLATION
    assert partition_dirs(tmp_path, "two") == [] and partition_dirs(tmp_path, "huge") == []
    logs.create_topic("__consumer_offsets", 3)  # internal topics count, but are never refused
    assert logs.partition_count == 7
    assert refused(logs.create_topic, "one", 1).error == Errors.POLICY_VIOLATION


def test_default_broker_partition_limit_follows_the_open_file_budget(tmp_path):
    assert manager(tmp_path, **{"weir.max.open.segment.files": 5000}).max_broker_partitions == 5000
    assert manager(tmp_path, **{"weir.max.open.segment.files": 10}).max_broker_partitions == 1000


def test_add_partitions(tmp_path):
    logs = manager(tmp_path, **{"max.broker.partitions": 20})
    logs.create_topic("grow", 2)
    assert len(logs.add_partitions("grow", 5).partitions) == 5
    assert [p.index for p in logs.topics["grow"].partitions] == [0, 1, 2, 3, 4]
    assert refused(logs.add_partitions, "grow", 5).error == Errors.INVALID_PARTITIONS
    assert refused(logs.add_partitions, "grow", 3).error == Errors.INVALID_PARTITIONS
    assert refused(logs.add_partitions, "nope", 3).error == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert refused(logs.add_partitions, "grow", 21).error == Errors.POLICY_VIOLATION
    assert refused(logs.add_partitions, "grow", 10_006).error == Errors.UNKNOWN_SERVER_ERROR
    (tmp_path / "grow-8").write_text("in the way")
    assert refused(logs.add_partitions, "grow", 10).error == Errors.KAFKA_STORAGE_ERROR
    assert len(logs.topics["grow"].partitions) == 5
    assert partition_dirs(tmp_path, "grow") == [f"grow-{i}" for i in range(5)]
    assert len(manager(tmp_path).topics["grow"].partitions) == 5


def test_a_crash_while_adding_partitions_keeps_the_old_count(tmp_path):
    logs = manager(tmp_path)
    logs.create_topic("grow", 2)
    record = (tmp_path / "topics" / "grow.json").read_text()
    logs.add_partitions("grow", 4)
    (tmp_path / "topics" / "grow.json").write_text(record)  # the crash came before the new record
    restarted = manager(tmp_path)
    assert len(restarted.topics["grow"].partitions) == 2
    assert partition_dirs(tmp_path, "grow") == ["grow-0", "grow-1"]
