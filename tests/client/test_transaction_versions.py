"""Our client's transactions at the transaction version each broker finalizes (KIP-890 part 2), on Weir
and on Apache Kafka 4.4.0, each at version 2 (their default) and at version 1 (Weir started with
``--feature transaction.version=1``, Kafka formatted so).

What the client sent is counted on its connections; on Weir the broker's own request counters (the
Prometheus endpoint) say the same. At version 2: no AddPartitionsToTxn or AddOffsetsToTxn, Produce
v12, TxnOffsetCommit v5, EndTxn v5 and an epoch one higher after every transaction. At version 1:
today's flow and versions, one epoch for the producer's life."""

from __future__ import annotations

import asyncio
import urllib.request
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from weir.client import Consumer, Producer, TopicPartition, complete_prepared_transaction, fence_transactional_id
from weir.client.cluster import Cluster
from weir.client.errors import InvalidTxnStateError, ProducerFencedError
from weir.client.producer.transaction_manager import TxnState
from weir.protocol.api_keys import ApiKey as A
from weir.protocol.errors import Errors
from weir.protocol.messages.update_features import SAFE_DOWNGRADE, UPGRADE
from tests.broker_process import BrokerProcess, free_port
from tests.client.txn_helpers import new_topic, read_committed, wait_until_no_open_transaction
from tests.features.raw import update, wait_for_level
from tests.pipeline.prepared import write_prepared
from reference.kafka import SHARED_TEST_SETTINGS, KafkaProcess
from tests.reference.wire import Wire

pytestmark = pytest.mark.timeout(300)

TV = "transaction.version"


def _weir(tmp_path_factory, name: str, level: int) -> BrokerProcess:
    port = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp(name) / "data",
                            overrides={**SHARED_TEST_SETTINGS, "metrics.listener": f"127.0.0.1:{port}"},
                            args=["--feature", f"{TV}={level}"]).start()
    process.metrics_url = f"http://127.0.0.1:{port}/metrics"
    return process


@pytest.fixture(scope="module")
def weir_tv1(tmp_path_factory):
    process = _weir(tmp_path_factory, "weir-tv1", 1)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def weir_tv2(tmp_path_factory):
    process = _weir(tmp_path_factory, "weir-tv2", 2)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def kafka_tv1(tmp_path_factory):
    process = KafkaProcess(tmp_path_factory.mktemp("kafka-tv1"), features={TV: 1}).start()
    yield process
    process.stop()


@pytest.fixture(params=[("weir", 2), ("kafka", 2), ("weir", 1), ("kafka", 1)], ids=lambda p: f"{p[0]}-tv{p[1]}")
def tv_broker(request):
    kind, level = request.param
    fixture = "kafka_broker" if (kind, level) == ("kafka", 2) else f"{kind}_tv{level}"
    return SimpleNamespace(kind=kind, level=level, process=request.getfixturevalue(fixture),
                           bootstrap=request.getfixturevalue(fixture).bootstrap)


def broker_requests(broker) -> dict[tuple[str, str], float]:
    """Weir's own count of the requests it served, (request name, version) -> count; {} for Kafka."""
    if broker.kind != "weir":
        return {}
    with urllib.request.urlopen(broker.process.metrics_url, timeout=10) as response:
        text = response.read().decode()
    return {(s.labels["request"], s.labels["version"]): s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == "kafka_network_requestmetrics_requests_total"}


def served_since(before: dict, after: dict, request: str) -> dict[str, float]:
    """Version -> requests named ``request`` served between two scrapes."""
    return {version: count - before.get((name, version), 0) for (name, version), count in after.items()
            if name == request and count > before.get((name, version), 0)}


def versions(sent, api_key: A) -> dict[int, int]:
    return {version: count for (key, version), count in sent.items() if key == api_key}


async def test_each_transaction_takes_the_finalized_version(tv_broker, topic_name):
    topic = await new_topic(tv_broker.bootstrap, topic_name, 2)
    before = await asyncio.to_thread(broker_requests, tv_broker)
    async with Producer(tv_broker.bootstrap, transactional_id=f"{topic}-tx", linger_ms=1) as producer:
        txn, identity = producer.transaction_manager, producer.sender.identity
        assert txn.transaction_version == tv_broker.level
        first = (identity.producer_id, identity.producer_epoch)
        epochs = []
        for round_ in range(3):
            async with producer.transaction():
                for partition in (0, 1):
                    await producer.send(topic, f"r{round_}p{partition}".encode(), partition=partition)
            epochs.append(identity.producer_epoch)
        async with producer.transaction():
            pass  # empty: no EndTxn, as the Java client (nothing was sent)
        assert identity.producer_id == first[0]
        sent = producer.cluster.requests_sent()
    bumps = 1 if tv_broker.level == 2 else 0
    assert epochs == [first[1] + bumps * (n + 1) for n in range(3)]
    # Counts include retries (a coordinator still loading, the previous transaction still completing).
    # The first InitProducerId goes before the version is known (the Java client, too, reads it after).
    assert set(versions(sent, A.INIT_PRODUCER_ID)) == {4}
    assert set(versions(sent, A.END_TXN)) == {5 if tv_broker.level == 2 else 3}
    if tv_broker.level == 2:
        assert versions(sent, A.ADD_PARTITIONS_TO_TXN) == {} and set(versions(sent, A.PRODUCE)) == {12}
    else:
        assert set(versions(sent, A.ADD_PARTITIONS_TO_TXN)) == {3} and set(versions(sent, A.PRODUCE)) == {10}
    after = await asyncio.to_thread(broker_requests, tv_broker)
    if tv_broker.kind == "weir":  # the broker saw the same flow
        assert set(served_since(before, after, "AddPartitionsToTxn")) == (set() if tv_broker.level == 2 else {"3"})
        assert set(served_since(before, after, "Produce")) == {"12" if tv_broker.level == 2 else "10"}
        assert set(served_since(before, after, "EndTxn")) == {"5" if tv_broker.level == 2 else "3"}
    assert sorted(await read_committed(tv_broker.bootstrap, topic, 2)) == sorted(
        f"r{r}p{p}".encode() for r in range(3) for p in (0, 1))


async def test_a_late_write_from_an_ended_transaction_is_fenced(tv_broker, topic_name):
    """KIP-890's hazard: a Produce of transaction 1 delayed until transaction 2 is open. At version 2 its
    epoch is behind (INVALID_PRODUCER_EPOCH); at version 1 the epoch is still current and only the
    partition verification (KIP-890 part 1) keeps it out, because transaction 2 did not add it."""
    topic = await new_topic(tv_broker.bootstrap, topic_name, 2)
    wire = await Wire.open(tv_broker.process)
    try:
        async with Producer(tv_broker.bootstrap, transactional_id=f"{topic}-tx", linger_ms=1) as producer:
            identity = producer.sender.identity
            async with producer.transaction():
                await producer.send_and_wait(topic, b"txn 1", partition=0)
            ended = (identity.producer_id, identity.producer_epoch - (1 if tv_broker.level == 2 else 0))
            producer.begin_transaction()
            await producer.send_and_wait(topic, b"txn 2", partition=1)
            version = 12 if tv_broker.level == 2 else 10
            late = await wire.produce(topic, [b"txn 1, delayed"], pid=ended[0], epoch=ended[1], seq=1,
                                      txn_id=f"{topic}-tx", partition=0, version=version)
            code = late.responses[0].partition_responses[0].error_code
            await producer.commit_transaction()
    finally:
        await wire.close()
    expected = Errors.INVALID_PRODUCER_EPOCH if tv_broker.level == 2 else Errors.INVALID_TXN_STATE
    assert Errors(code) == expected
    assert sorted(await read_committed(tv_broker.bootstrap, topic, 2)) == [b"txn 1", b"txn 2"]


async def test_consume_transform_produce_commits_output_and_offsets_together(tv_broker, topic_name):
    source = await new_topic(tv_broker.bootstrap, topic_name, 2)
    sink = await new_topic(tv_broker.bootstrap, f"{topic_name}-out", 2)
    async with Producer(tv_broker.bootstrap) as plain:
        for i in range(20):
            await plain.send(source, f"in{i}".encode(), partition=i % 2)
    group = f"{source}-g"
    consumer = Consumer(source, bootstrap_servers=tv_broker.bootstrap, group_id=group, enable_auto_commit=False,
                        auto_offset_reset="earliest", isolation_level="read_committed")
    await consumer.start()
    try:
        async with Producer(tv_broker.bootstrap, transactional_id=f"{source}-tx", linger_ms=1) as producer:
            seen = 0
            while seen < 20:
                batches = await consumer.getmany(timeout_ms=500)
                if not batches:
                    continue
                async with producer.transaction():
                    offsets = {}
                    for tp, records in batches.items():
                        for record in records:
                            await producer.send(sink, record.value.upper(), partition=tp.partition)
                        offsets[tp] = records[-1].offset + 1
                        seen += len(records)
                    await producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
            sent = producer.cluster.requests_sent()
            # A transaction aborted after its offsets: neither they nor its output count.
            producer.begin_transaction()
            await producer.send(sink, b"aborted", partition=0)
            await producer.send_offsets_to_transaction({TopicPartition(source, 0): 0}, consumer.group_metadata())
            await producer.abort_transaction()
        committed = [(await consumer.committed(TopicPartition(source, p))).offset for p in (0, 1)]
    finally:
        await consumer.close()
    assert committed == [10, 10]
    assert sorted(await read_committed(tv_broker.bootstrap, sink, 2)) == sorted(f"IN{i}".encode() for i in range(20))
    if tv_broker.level == 2:
        assert versions(sent, A.ADD_OFFSETS_TO_TXN) == {} and set(versions(sent, A.TXN_OFFSET_COMMIT)) == {5}
    else:
        assert set(versions(sent, A.ADD_OFFSETS_TO_TXN)) == {3} and set(versions(sent, A.TXN_OFFSET_COMMIT)) == {3}


async def test_a_hand_off_commits_aborts_and_answers_a_retry(tv_broker, topic_name):
    """The Spark sink's path: a task prepares, the driver ends the transaction by id and epoch. At
    version 2 the driver's EndTxn v5 bumps the epoch; the same completion repeated (a roll-forward
    after a crash) names the epoch one behind and is answered as the retry it is."""
    topic = await new_topic(tv_broker.bootstrap, topic_name, 1)
    cluster = Cluster(tv_broker.bootstrap)
    await cluster.refresh([])
    try:
        kept = await write_prepared(tv_broker.bootstrap, f"{topic}-t0", topic, [b"kept"])
        await complete_prepared_transaction(cluster, kept.transactional_id, kept.prepared, commit=True)
        await complete_prepared_transaction(cluster, kept.transactional_id, kept.prepared, commit=True)
        with pytest.raises(InvalidTxnStateError):  # the other outcome, after the fact
            await complete_prepared_transaction(cluster, kept.transactional_id, kept.prepared, commit=False)

        dropped = await write_prepared(tv_broker.bootstrap, f"{topic}-t1", topic, [b"dropped"])
        await complete_prepared_transaction(cluster, dropped.transactional_id, dropped.prepared, commit=False)
        await complete_prepared_transaction(cluster, dropped.transactional_id, dropped.prepared, commit=False)
        with pytest.raises(InvalidTxnStateError):
            await complete_prepared_transaction(cluster, dropped.transactional_id, dropped.prepared, commit=True)

        # The next holder of the id (a restarted driver fencing it) finds the epoch the ending left.
        claimed = await fence_transactional_id(cluster, kept.transactional_id)
        assert (claimed.producer_id, claimed.producer_epoch) == (
            kept.producer_id, kept.producer_epoch + (2 if tv_broker.level == 2 else 1))
        with pytest.raises(ProducerFencedError):  # the task's epoch is gone now
            await complete_prepared_transaction(cluster, kept.transactional_id, kept.prepared, commit=True)
    finally:
        await cluster.close()
    assert await read_committed(tv_broker.bootstrap, topic) == [b"kept"]


async def test_after_a_coordinator_timeout_the_abort_and_the_next_transaction(tv_broker, topic_name):
    """The coordinator aborts a transaction open past transaction_timeout_ms and bumps the epoch. At
    version 2 the producer's abort is the retry of that abort (success, epoch adopted) and the next
    transaction commits; at version 1 the abort is PRODUCER_FENCED, fatal (as for the Java client)."""
    topic = await new_topic(tv_broker.bootstrap, topic_name)
    async with Producer(tv_broker.bootstrap, transactional_id=f"{topic}-tx", transaction_timeout_ms=1000) as producer:
        producer.begin_transaction()
        await producer.send_and_wait(topic, b"too slow")
        await wait_until_no_open_transaction(tv_broker.bootstrap, topic)
        if tv_broker.level == 2:
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send(topic, b"next")
        else:
            with pytest.raises(ProducerFencedError):
                await producer.abort_transaction()
            assert producer.transaction_manager.state is TxnState.FATAL_ERROR
    assert await read_committed(tv_broker.bootstrap, topic) == ([b"next"] if tv_broker.level == 2 else [])


@pytest.mark.parametrize("kind", ["weir", "kafka"])
async def test_an_upgrade_to_version_2_bumps_the_epoch_once_and_the_next_transaction_runs_at_2(kind, request,
                                                                                               topic_name):
    """The cluster goes from 1 to 2 (kafka-features upgrade) under a running producer. The client
    learns it from the ApiVersions of its next connections and, as the Java client, takes it when the
    open transaction ends: that one ends at 1, InitProducerId bumps the epoch, the next runs at 2."""
    process = request.getfixturevalue(f"{kind}_tv1")
    topic = await new_topic(process.bootstrap, topic_name)
    try:
        async with Producer(process.bootstrap, transactional_id=f"{topic}-tx", linger_ms=1) as producer:
            txn, identity = producer.transaction_manager, producer.sender.identity
            async with producer.transaction():
                await producer.send(topic, b"at 1")
            epoch = identity.producer_epoch
            assert (await asyncio.to_thread(update, process, 2, (TV, 2, UPGRADE)))[0] == Errors.NONE
            assert (await asyncio.to_thread(wait_for_level, process, 2))[1] == 2
            producer.begin_transaction()
            await producer.cluster.close()  # reconnects: the brokers' ApiVersions now finalize 2
            await producer.send(topic, b"ends at 1")
            await producer.commit_transaction()
            assert (txn.transaction_version, identity.producer_epoch) == (2, epoch + 1)
            async with producer.transaction():
                await producer.send(topic, b"at 2")
            assert identity.producer_epoch == epoch + 2
            assert 12 in versions(producer.cluster.requests_sent(), A.PRODUCE)
    finally:  # the module's broker stays at version 1 for the others
        assert (await asyncio.to_thread(update, process, 2, (TV, 1, SAFE_DOWNGRADE)))[0] == Errors.NONE
        assert (await asyncio.to_thread(wait_for_level, process, 1))[1] == 1
    assert await read_committed(process.bootstrap, topic) == [b"at 1", b"ends at 1", b"at 2"]
