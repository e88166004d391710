"""The exactly-once sink's driver-side recovery and commit rules, against the real broker without Spark,
at transaction version 2 (the broker's default: the driver's EndTxn v5 bumps the epoch, a roll-forward
repeats it one epoch behind) and at version 1."""

import asyncio

import pytest
from pyspark.sql.types import BinaryType, StructField, StructType

from weir.client import complete_prepared_transaction, fence_transactional_id
from weir.client.cluster import Cluster
from weir.pipeline.decisions import COMMIT, DONE
from weir.pipeline.exactly_once import ExactlyOnceStreamWriter, TransactionLostError, TxnCommitMessage
from tests.broker_process import BrokerProcess
from tests.support.topics import create_topic
from tests.pipeline.prepared import visible, write_prepared as write

SCHEMA = StructType([StructField("value", BinaryType())])


@pytest.fixture(scope="module", params=[2, 1], ids=["tv2", "tv1"])
def shared_broker(request, tmp_path_factory):
    """One broker per transaction version for the module's tests, each on its own topics."""
    args = [] if request.param == 2 else ["--feature", "transaction.version=1"]
    process = BrokerProcess(tmp_path_factory.mktemp(f"sink-tv{request.param}") / "data", args=args).start()
    yield process
    process.stop()


def sink(bootstrap, topic, query):
    return ExactlyOnceStreamWriter({"kafka.bootstrap.servers": bootstrap, "topic": topic,
                                    "weir.sink.decisionstopic": f"decisions-{query}"}, SCHEMA, query, planning=False)


def settled(bootstrap, topic, partitions):
    """(read_committed values, whether every last stable offset has reached its high watermark)."""
    values, committed_ends = asyncio.run(visible(bootstrap, topic, partitions))
    _all, ends = asyncio.run(visible(bootstrap, topic, partitions, "read_uncommitted"))
    return values, committed_ends == ends


def message(writer):
    return TxnCommitMessage(writer.transactional_id, writer.producer_id, writer.producer_epoch,
                            len(writer.partitions), writer.records)


def test_recovery_aborts_an_undecided_batch_even_on_ids_no_task_will_reuse(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    writer = sink(bootstrap, topic_name, f"q-{topic_name}")
    # Batch 0 of a one-task plan completed; batch 1 ran three tasks and the driver died before deciding.
    asyncio.run(writer.log.write({"batch": 0, "state": DONE, "tasks": 1}))
    for task in range(3):
        asyncio.run(write(bootstrap, writer.transactional_id(task), topic_name, [f"undecided {task}".encode()]))
    assert settled(bootstrap, topic_name, 2) == ([], False)
    asyncio.run(writer.recover())
    assert settled(bootstrap, topic_name, 2) == ([], True)  # aborted at once, not after transaction.timeout.ms
    assert asyncio.run(writer.log.latest())["probed"] >= 3


def test_recovery_rolls_a_decided_batch_forward_and_a_replay_writes_nothing(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    writer = sink(bootstrap, topic_name, f"q-{topic_name}")
    tasks = [asyncio.run(write(bootstrap, writer.transactional_id(t), topic_name, [f"decided {t}".encode()]))
             for t in range(2)]
    asyncio.run(writer.log.write({"batch": 4, "state": COMMIT, "tasks": 2,
                                  "txns": [[t.transactional_id, t.producer_id, t.producer_epoch] for t in tasks]}))
    asyncio.run(writer.recover())
    assert settled(bootstrap, topic_name, 2) == ([b"decided 0", b"decided 1"], True)
    assert asyncio.run(writer.log.latest())["state"] == DONE

    # Spark runs batch 4 again (its commit log lost it): its tasks write nothing, the commit changes nothing.
    replay = [writer._write(t, 4, iter(())) for t in range(2)]
    messages = [asyncio.run(task) for task in replay]
    assert all(m.partitions == 0 and m.producer_id == -1 for m in messages)
    writer.commit(messages, 4)
    assert settled(bootstrap, topic_name, 2) == ([b"decided 0", b"decided 1"], True)

    # The next batch commits normally.
    fresh = asyncio.run(write(bootstrap, writer.transactional_id(0), topic_name, [b"batch 5"]))
    writer.commit([message(fresh)], 5)
    assert settled(bootstrap, topic_name, 2)[0] == [b"batch 5", b"decided 0", b"decided 1"]
    assert asyncio.run(writer.log.latest()) == {"batch": 5, "state": DONE, "tasks": 1, "probed": 3}  # ids 0-2 claimed


def test_a_decided_transaction_that_timed_out_stops_the_query(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    writer = sink(bootstrap, topic_name, f"q-{topic_name}")
    task = asyncio.run(write(bootstrap, writer.transactional_id(0), topic_name, [b"late"]))

    async def coordinator_aborts():  # what the coordinator does when transaction.timeout.ms passes
        cluster = Cluster(bootstrap)
        await cluster.refresh([])
        await complete_prepared_transaction(cluster, task.transactional_id, task.prepared, commit=False)
        await fence_transactional_id(cluster, task.transactional_id)  # the epoch moves on
        await cluster.close()
    asyncio.run(coordinator_aborts())
    try:
        writer.commit([message(task)], 0)
    except TransactionLostError as lost:
        assert "transaction.timeout.ms" in str(lost)
    else:
        raise AssertionError("a lost decided transaction must stop the query")
