"""Log-store pieces behind the admin APIs: DeleteRecords' log start offset, growing a topic,
replacing a topic's overrides, broker defaults following dynamic settings."""

import json

import pytest

from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.dynamic_config import DynamicBrokerConfigs
from weir.broker.log import log_start, time_lookup
from weir.broker.log.manager import LogManager
from weir.protocol.errors import Errors, KafkaError
from tests.log.test_partition import append, open_partition, read_values


def test_delete_records_moves_the_start_deletes_whole_segments_and_survives_restart(tmp_path):
    p = open_partition(tmp_path, **{"segment.bytes": 200})
    for n in range(6):
        append(p, b"%d" % n * 50)
    assert len(p.segments) == 6
    assert log_start.delete_records_before(p, 3) == 3
    assert [s.base_offset for s in p.segments] == [3, 4, 5]
    assert log_start.delete_records_before(p, 2) == 3, "never backwards"
    with pytest.raises(KafkaError) as raised:
        log_start.delete_records_before(p, 7)
    assert raised.value.error == Errors.OFFSET_OUT_OF_RANGE
    with pytest.raises(KafkaError):
        p.read(2, 100)
    p.close()
    again = open_partition(tmp_path, **{"segment.bytes": 200})
    assert again.log_start_offset == 3
    assert read_values(again, 3)[0] == b"3" * 50


def test_delete_records_inside_a_segment_keeps_it_but_not_its_earlier_offsets(tmp_path):
    p = open_partition(tmp_path)
    append(p, b"a", b"b", b"c")
    append(p, b"d")
    assert log_start.delete_records_before(p, 2) == 2
    assert len(p.segments) == 1 and p.log_start_offset == 2
    with pytest.raises(KafkaError):
        p.read(1, 100)
    assert read_values(p, 2) == [b"a", b"b", b"c", b"d"], "the batch holding the start is returned whole, as Kafka"
    p.close()
    assert open_partition(tmp_path).log_start_offset == 2


def test_a_stored_start_past_a_truncated_log_end_is_clamped(tmp_path):
    p = open_partition(tmp_path)
    append(p, b"a")
    p.close()
    (tmp_path / log_start.LOG_START_OFFSET_FILE).write_text("50\n")
    assert open_partition(tmp_path).log_start_offset == 1


def manager(tmp_path, config=None):
    logs = LogManager(tmp_path, config or BrokerConfig(), ManualClock())
    logs.open()
    return logs


def test_add_partitions_grows_persists_and_refuses_shrinking(tmp_path):
    logs = manager(tmp_path)
    logs.create_topic("t", 1, {"retention.ms": 5000})
    logs.add_partitions("t", 3)
    assert [p.index for p in logs.topics["t"].partitions] == [0, 1, 2]
    assert logs.topics["t"].partitions[2].config["retention.ms"] == 5000
    with pytest.raises(KafkaError) as raised:
        logs.add_partitions("t", 3)
    assert raised.value.error == Errors.INVALID_PARTITIONS
    reopened = manager(tmp_path)
    assert len(reopened.topics["t"].partitions) == 3
    assert reopened.topics["t"].topic_id == logs.topics["t"].topic_id


def test_add_partitions_is_all_or_nothing(tmp_path):
    logs = manager(tmp_path)
    logs.create_topic("t", 1)
    (tmp_path / "t-2").mkdir()  # something in the way of the second new partition
    with pytest.raises(KafkaError) as failed:
        logs.add_partitions("t", 3)
    assert failed.value.error == Errors.KAFKA_STORAGE_ERROR
    assert len(logs.topics["t"].partitions) == 1
    assert not (tmp_path / "t-1").exists()


def test_topic_overrides_are_persisted_and_applied_to_live_partitions(tmp_path):
    logs = manager(tmp_path)
    live = logs.create_topic("t", 2).partitions[1].config
    logs.set_topic_overrides("t", {"max.message.bytes": 100})
    assert live["max.message.bytes"] == 100, "the partition's own dict changes"
    meta = json.loads((tmp_path / "t-1" / "partition.metadata").read_text())
    assert meta["configs"] == {"max.message.bytes": 100}
    logs.set_topic_overrides("t", {})
    assert live["max.message.bytes"] == 1048588
    assert manager(tmp_path).topics["t"].overrides == {}


def test_validation_follows_overrides_changed_on_a_live_partition(tmp_path):
    """A partition keeps what validation reads of its config between batches; a changed
    cleanup.policy must still apply from the next batch on (and be undone with the override)."""
    from tests.log.poison import NOW, batch, record
    logs = manager(tmp_path)
    partition = logs.create_topic("t", 1).partitions[0]
    keyless = memoryview(batch(record(0, key=None), 1))
    assert partition.validate_client_batch(keyless, 9, NOW).header.records_count == 1
    logs.set_topic_overrides("t", {"cleanup.policy": "compact"})
    with pytest.raises(KafkaError) as refused:
        partition.validate_client_batch(keyless, 9, NOW)
    assert refused.value.error == Errors.INVALID_RECORD
    logs.set_topic_overrides("t", {})
    assert partition.validate_client_batch(keyless, 9, NOW).header.records_count == 1


def test_dynamic_broker_settings_rank_persist_and_feed_topic_defaults(tmp_path):
    config = BrokerConfig({"log.retention.bytes": "100"})
    dynamic = DynamicBrokerConfigs(tmp_path, config)
    dynamic.load()
    logs = manager(tmp_path, config)
    live = logs.create_topic("t", 1).partitions[0].config
    dynamic.replace("", {"log.retention.bytes": "200"})
    logs.refresh_topic_configs()
    assert config["log.retention.bytes"] == 200 and live["retention.bytes"] == 200
    dynamic.replace("0", {"log.retention.bytes": "300"})
    assert config["log.retention.bytes"] == 300, "this node's value wins over the cluster default"
    with pytest.raises(KafkaError) as raised:
        dynamic.replace("0", {"num.partitions": "4"})
    assert raised.value.error == Errors.INVALID_REQUEST
    restarted = BrokerConfig({"log.retention.bytes": "100"})
    DynamicBrokerConfigs(tmp_path, restarted).load()
    assert restarted["log.retention.bytes"] == 300 and restarted.dynamic_default == {"log.retention.bytes": 200}


def test_timestamp_lookups_skip_records_below_the_log_start(tmp_path):
    p = open_partition(tmp_path)
    append(p, b"a", b"b", timestamp=1000)
    append(p, b"c", timestamp=900)
    append(p, b"d", timestamp=2000)
    assert time_lookup.offset_for_timestamp(p, 1000) == (0, 1000)
    log_start.delete_records_before(p, 2)
    assert time_lookup.offset_for_timestamp(p, 1000) == (3, 2000), "0 and 1 are deleted; 2 is older than asked"
    assert time_lookup.offset_for_timestamp(p, 500) == (2, 900)
    assert time_lookup.offset_for_timestamp(p, 3000) is None


async def test_the_lso_does_not_fall_below_a_deleted_records_start(tmp_path):
    from tests.log.test_partition_transactions import plain_append, txn_append
    p = open_partition(tmp_path)
    await plain_append(p, b"before")
    await txn_append(p, b"open")
    await plain_append(p, b"after")
    assert p.last_stable_offset == 1
    log_start.delete_records_before(p, 2)
    assert p.last_stable_offset == 2, "Kafka keeps the first unstable offset at or above the log start"


def test_a_bad_dynamic_config_file_is_a_config_error(tmp_path):
    from weir.broker.config import ConfigError
    from weir.broker.dynamic_config import FILE_NAME
    (tmp_path / FILE_NAME).write_text(json.dumps({"cluster": {"log.segment.bytes": "tiny"}, "node": {}}))
    with pytest.raises(ConfigError, match="log.segment.bytes"):
        DynamicBrokerConfigs(tmp_path, BrokerConfig()).load()
