"""transaction.timeout.ms against the trigger interval, the batch's age and the restart allowance:
bad settings fail before anything is decided (pipeline/exactly_once.py, the orders job)."""

import asyncio
import time

import pytest
from pyspark.sql.types import BinaryType, StructField, StructType

from weir.pipeline.exactly_once import (ExactlyOnceStreamWriter, TransactionTimingError, TxnCommitMessage,
                                   check_transaction_timing)
from weir.pipeline.jobs import orders
from tests.support.topics import create_topic
from tests.pipeline.prepared import visible, write_prepared as write

SCHEMA = StructType([StructField("value", BinaryType())])


def test_settings_leaving_no_room_for_a_batch_and_a_restart_are_refused():
    check_transaction_timing(60000, 30000)
    check_transaction_timing(600000, 120000, trigger_interval_ms=5000)
    with pytest.raises(TransactionTimingError, match="restartAllowanceMs"):
        check_transaction_timing(60000, 60000)
    with pytest.raises(TransactionTimingError, match="trigger interval"):
        check_transaction_timing(60000, 30000, trigger_interval_ms=30000)
    with pytest.raises(TransactionTimingError):  # the sink checks its options when Spark creates it
        ExactlyOnceStreamWriter({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t",
                                 "kafka.transaction.timeout.ms": "60000", "weir.sink.triggerintervalms": "55000"},
                                SCHEMA, "q", planning=False)


def test_the_orders_job_refuses_a_trigger_interval_the_timeout_cannot_cover():
    base = ["--bootstrap-servers", "127.0.0.1:1", "--checkpoint", "/nonexistent"]
    with pytest.raises(TransactionTimingError, match="trigger interval"):
        orders.parse_args(base + ["--trigger-interval", "10min", "--transaction-timeout-ms", "600000"])
    assert orders.parse_args(base + ["--trigger-interval", "500ms"]).trigger_ms == 500
    # Spark's own sink has no transactions: nothing to check.
    assert orders.parse_args(base + ["--trigger-interval", "20min", "--sink-format", "kafka"]).trigger_ms == 1200000


def test_a_batch_too_old_to_survive_a_restart_is_aborted_not_decided(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    writer = ExactlyOnceStreamWriter({"kafka.bootstrap.servers": bootstrap, "topic": topic_name,
                                      "weir.sink.decisionstopic": f"decisions-{topic_name}",
                                      "kafka.transaction.timeout.ms": "60000",
                                      "weir.sink.restartallowancems": "30000"}, SCHEMA, topic_name, planning=False)
    task = asyncio.run(write(bootstrap, writer.transactional_id(0), topic_name, [b"slow batch"]))
    # The task began 40 s ago: 40 s + a 30 s allowance for a restart would pass the 60 s timeout.
    old = TxnCommitMessage(task.transactional_id, task.producer_id, task.producer_epoch, len(task.partitions),
                           task.records, started_ms=int(time.time() * 1000) - 40000)
    with pytest.raises(TransactionTimingError, match="aborted, not decided"):
        writer.commit([old], 0)
    assert asyncio.run(writer.log.latest()) is None  # no decision
    values, committed_ends = asyncio.run(visible(bootstrap, topic_name, 1))
    _all, ends = asyncio.run(visible(bootstrap, topic_name, 1, "read_uncommitted"))
    assert values == [] and committed_ends == ends  # aborted at once, nothing left open

    # A young batch passes the check and commits.
    fresh = asyncio.run(write(bootstrap, writer.transactional_id(0), topic_name, [b"quick batch"]))
    writer.commit([TxnCommitMessage(fresh.transactional_id, fresh.producer_id, fresh.producer_epoch,
                                    len(fresh.partitions), fresh.records, started_ms=int(time.time() * 1000))], 0)
    assert asyncio.run(visible(bootstrap, topic_name, 1))[0] == [b"quick batch"]
