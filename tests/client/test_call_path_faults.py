"""Every request kind our client sends survives NOT_LEADER_OR_FOLLOWER, COORDINATOR_LOAD_IN_PROGRESS,
NOT_COORDINATOR and a dropped connection, exactly once, within its deadline (issue 18 item 3).

A Kafka-protocol-aware proxy (tests/support/kafka_proxy.py) sits between our client and one broker
process. For each request kind, the four faults are queued for it, so the operation's requests of
that kind meet them one after the other: the broker's answer comes back with the error code in
every error slot (the broker did the work: a retry meets it done), and then the connection drops
before an answer. The operation must still succeed once: the records read back directly from the
broker are exactly those sent, committed offsets and topic state are what was asked. A code that
is not retriable reaches the caller as its typed error, with its number.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.broker_process import BrokerProcess
from tests.support.kafka_proxy import DROP, KafkaProxy
from tests.support.topics import create_topic
from tests.support.waiting import wait_until_async
from weir.client import Admin, Consumer, GroupMetadata, OffsetAndMetadata, Producer, TopicPartition
from weir.client.admin import AlterConfigOp, ConfigResource, NewTopic
from weir.client.errors import (GroupAuthorizationFailedError, GroupIdNotFoundError, InvalidTxnStateError,
                                TopicAuthorizationFailedError, TransactionalIdAuthorizationFailedError,
                                UnknownServerError)
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors

FAULTS = (Errors.NOT_LEADER_OR_FOLLOWER, Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NOT_COORDINATOR, DROP)
#: Short backoffs so four retries cost milliseconds; the deadline every operation must meet.
FAST = {"retry_backoff_ms": 5, "retry_backoff_max_ms": 50, "request_timeout_ms": 5000}
DEADLINE = 20.0
RECORDS = 12


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    """One broker for the module, at transaction.version 1 so AddPartitionsToTxn and AddOffsetsToTxn
    are sent (version 2 adds partitions implicitly), and without the first rebalance's 3 s delay."""
    process = BrokerProcess(tmp_path_factory.mktemp("faults") / "data",
                            overrides={"group.initial.rebalance.delay.ms": "0"},
                            args=["--feature", "transaction.version=1"]).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def kafka_tv2(tmp_path_factory):
    """A broker at transaction.version 2 (its default): Produce v12 and TxnOffsetCommit v5 add to the
    transaction themselves, EndTxn v5 bumps the epoch, so a retried EndTxn names the epoch before it."""
    process = BrokerProcess(tmp_path_factory.mktemp("faults-tv2") / "data",
                            overrides={"group.initial.rebalance.delay.ms": "0"}).start()
    yield process
    process.stop()


@pytest.fixture
async def proxy(kafka):
    async with KafkaProxy(kafka.bootstrap) as started:
        yield started


async def produce_directly(bootstrap: str, topic: str, count: int = RECORDS) -> None:
    async with Producer(bootstrap, linger_ms=0) as producer:
        for i in range(count):
            await producer.send(topic, b"%d" % i, partition=0)
        await producer.flush()


async def read_directly(bootstrap: str, topic: str, *, read_committed: bool = False) -> list[bytes]:
    """Every record of partition 0, asked of the broker itself."""
    tp = TopicPartition(topic, 0)
    async with Consumer(bootstrap_servers=bootstrap, isolation_level="read_committed" if read_committed
                        else "read_uncommitted") as consumer:
        consumer.assign([tp])
        end = (await consumer.end_offsets([tp]))[tp]
        await consumer.seek_to_beginning(tp)
        values: list[bytes] = []
        while await consumer.position(tp) < end:
            values += [r.value for r in (await consumer.getmany(tp, timeout_ms=500)).get(tp, [])]
        return values


def expected(count: int = RECORDS) -> list[bytes]:
    return [b"%d" % i for i in range(count)]


# ---------------------------------------------------------------------------------------------- scenarios


async def produce(proxy: KafkaProxy, direct: str, topic: str) -> None:
    await asyncio.to_thread(create_topic, direct, topic)
    async with Producer(proxy.bootstrap, linger_ms=0, **FAST) as producer:
        deliveries = [await producer.send(topic, b"%d" % i) for i in range(RECORDS)]
        await producer.flush()
        assert [(await d).offset for d in deliveries] == list(range(RECORDS))
    assert await read_directly(direct, topic) == expected()  # idempotence: no duplicates, in order


async def consume(proxy: KafkaProxy, direct: str, topic: str) -> None:
    await asyncio.to_thread(create_topic, direct, topic)
    await produce_directly(direct, topic)
    tp = TopicPartition(topic, 0)
    async with Consumer(bootstrap_servers=proxy.bootstrap, isolation_level="read_uncommitted", **FAST) as consumer:
        consumer.assign([tp])
        assert (await consumer.end_offsets([tp]))[tp] == RECORDS
        await consumer.seek_to_beginning(tp)
        values: list[bytes] = []
        while len(values) < RECORDS:
            values += [r.value for r in (await consumer.getmany(tp, timeout_ms=200)).get(tp, [])]
        assert values == expected()


async def group(proxy: KafkaProxy, direct: str, topic: str) -> None:
    await asyncio.to_thread(create_topic, direct, topic)
    await produce_directly(direct, topic)
    group_id, tp = f"g-{topic}", TopicPartition(topic, 0)
    async with Consumer(topic, bootstrap_servers=proxy.bootstrap, group_id=group_id, enable_auto_commit=False,
                        auto_offset_reset="earliest", heartbeat_interval_ms=20, **FAST) as consumer:
        values: list[bytes] = []
        while len(values) < RECORDS:
            values += [r.value for r in (await consumer.getmany(timeout_ms=200)).get(tp, [])]
        assert values == expected()
        await consumer.commit()
        assert (await consumer.committed(tp)).offset == RECORDS
        if proxy.faults.get(ApiKey.HEARTBEAT):
            await wait_until_async(lambda: not proxy.faults[ApiKey.HEARTBEAT], "the heartbeats to meet every fault")
            await consumer.getmany(timeout_ms=100)
            assert consumer.assignment() == {tp}  # still a member, with the same partition
    async with Admin(direct) as admin:
        assert (await admin.list_group_offsets(group_id))[tp].offset == RECORDS
        assert (await admin.describe_groups([group_id]))[group_id].state == "Empty"  # it left


async def transaction(proxy: KafkaProxy, direct: str, topic: str) -> None:
    await asyncio.to_thread(create_topic, direct, topic)
    consumed, group_id = TopicPartition(f"{topic}-in", 0), f"g-{topic}"
    await asyncio.to_thread(create_topic, direct, consumed.topic)
    async with Producer(proxy.bootstrap, transactional_id=f"t-{topic}", linger_ms=0, **FAST) as producer:
        producer.begin_transaction()
        for i in range(RECORDS):
            await producer.send(topic, b"%d" % i)
        await producer.send_offsets_to_transaction({consumed: OffsetAndMetadata(5)},
                                                   GroupMetadata(group_id, -1, "", None))
        await producer.commit_transaction()
    assert await read_directly(direct, topic, read_committed=True) == expected()
    async with Admin(direct) as admin:
        assert (await admin.list_group_offsets(group_id))[consumed].offset == 5


async def admin_topics(proxy: KafkaProxy, direct: str, topic: str) -> None:
    resource, tp = ConfigResource.topic(topic), TopicPartition(topic, 0)
    async with Admin(proxy.bootstrap, **FAST) as admin:
        await admin.create_topics([NewTopic(topic, 1, 1)])
        await admin.create_partitions({topic: 2})
        await admin.incremental_alter_configs({resource: [AlterConfigOp("retention.ms", "123456")]})
        await admin.alter_configs({resource: {"retention.ms": "654321"}})
        assert (await admin.describe_configs([resource]))[resource]["retention.ms"].value == "654321"
        await produce_directly(direct, topic, 5)
        assert await admin.delete_records({tp: 3}) == {tp: 3}
        assert await admin.list_offsets({tp: -2}) == {tp: 3}
        assert len((await admin.describe_topics([topic]))[topic].partitions) == 2
        assert (await admin.describe_cluster()).brokers
        await admin.delete_topics([topic])
    async with Admin(direct) as admin:
        assert topic not in await admin.list_topics()


async def admin_groups(proxy: KafkaProxy, direct: str, topic: str) -> None:
    await asyncio.to_thread(create_topic, direct, topic)
    group_id, tp = f"g-{topic}", TopicPartition(topic, 0)
    async with Admin(proxy.bootstrap, **FAST) as admin:
        await admin.alter_group_offsets(group_id, {tp: 7})
        assert (await admin.list_group_offsets(group_id))[tp].offset == 7
        assert group_id in {g.group_id for g in await admin.list_groups()}
        assert (await admin.describe_groups([group_id]))[group_id].state == "Empty"
        await admin.delete_group_offsets(group_id, [tp])
        assert await admin.list_group_offsets(group_id) == {}
        await admin.delete_groups([group_id])
    async with Admin(direct) as admin:
        with pytest.raises(GroupIdNotFoundError):
            await admin.describe_groups([group_id])


async def admin_transactions(proxy: KafkaProxy, direct: str, topic: str) -> None:
    await asyncio.to_thread(create_topic, direct, topic)
    tp, txn_id = TopicPartition(topic, 0), f"t-{topic}"
    async with Producer(direct, transactional_id=txn_id, linger_ms=0) as hanging:
        hanging.begin_transaction()
        await (await hanging.send(topic, b"open"))
        async with Admin(proxy.bootstrap, **FAST) as admin:
            assert txn_id in {t.transactional_id for t in await admin.list_transactions()}
            assert (await admin.describe_transactions([txn_id]))[txn_id].topic_partitions == [tp]
            [producer] = (await admin.describe_producers([tp]))[tp]
            assert producer.current_transaction_start_offset == 0
            await admin.abort_transaction(await admin.abort_spec_for(tp, 0))
            assert (await admin.describe_producers([tp]))[tp][0].current_transaction_start_offset == -1
    assert await read_directly(direct, topic, read_committed=True) == []


SCENARIOS = {
    ApiKey.PRODUCE: produce, ApiKey.METADATA: produce, ApiKey.INIT_PRODUCER_ID: produce,
    ApiKey.FETCH: consume, ApiKey.LIST_OFFSETS: consume,
    ApiKey.FIND_COORDINATOR: group, ApiKey.JOIN_GROUP: group, ApiKey.SYNC_GROUP: group, ApiKey.HEARTBEAT: group,
    ApiKey.OFFSET_COMMIT: group, ApiKey.OFFSET_FETCH: group, ApiKey.LEAVE_GROUP: group,
    ApiKey.ADD_PARTITIONS_TO_TXN: transaction, ApiKey.ADD_OFFSETS_TO_TXN: transaction,
    ApiKey.TXN_OFFSET_COMMIT: transaction, ApiKey.END_TXN: transaction,
    ApiKey.CREATE_TOPICS: admin_topics, ApiKey.CREATE_PARTITIONS: admin_topics,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: admin_topics, ApiKey.ALTER_CONFIGS: admin_topics,
    ApiKey.DESCRIBE_CONFIGS: admin_topics, ApiKey.DELETE_RECORDS: admin_topics, ApiKey.DESCRIBE_CLUSTER: admin_topics,
    ApiKey.DELETE_TOPICS: admin_topics,
    ApiKey.DESCRIBE_GROUPS: admin_groups, ApiKey.LIST_GROUPS: admin_groups, ApiKey.OFFSET_DELETE: admin_groups,
    ApiKey.DELETE_GROUPS: admin_groups,
    ApiKey.LIST_TRANSACTIONS: admin_transactions, ApiKey.DESCRIBE_TRANSACTIONS: admin_transactions,
    ApiKey.DESCRIBE_PRODUCERS: admin_transactions, ApiKey.WRITE_TXN_MARKERS: admin_transactions,
}
#: Kinds whose scenario sends them under another scenario's name too: also run there.
ALSO = [(ApiKey.INIT_PRODUCER_ID, transaction), (ApiKey.FIND_COORDINATOR, transaction),
        (ApiKey.LIST_OFFSETS, admin_topics)]


@pytest.mark.parametrize("api_key, scenario", [*SCENARIOS.items(), *ALSO],
                         ids=[f"{k.name}-{s.__name__}" for k, s in [*SCENARIOS.items(), *ALSO]])
async def test_each_request_kind_survives_the_retriable_faults(kafka, proxy, topic_name, api_key, scenario):
    proxy.inject(api_key, *FAULTS)
    async with asyncio.timeout(DEADLINE):
        await scenario(proxy, kafka.bootstrap, topic_name)
    spent = [fault for key, fault in proxy.injected if key == api_key.name]
    assert spent == [Errors(f).name if f is not None else "DROP" for f in FAULTS], proxy.injected


@pytest.mark.parametrize("api_key", [ApiKey.PRODUCE, ApiKey.TXN_OFFSET_COMMIT, ApiKey.END_TXN,
                                     ApiKey.INIT_PRODUCER_ID], ids=lambda k: k.name)
async def test_transaction_version_2_requests_survive_the_retriable_faults(kafka_tv2, topic_name, api_key):
    async with KafkaProxy(kafka_tv2.bootstrap) as proxy:
        proxy.inject(api_key, *FAULTS)
        async with asyncio.timeout(DEADLINE):
            await transaction(proxy, kafka_tv2.bootstrap, topic_name)
        assert len([key for key, _ in proxy.injected if key == api_key.name]) == len(FAULTS), proxy.injected
        assert not proxy.requests["ADD_PARTITIONS_TO_TXN"]  # it ran at version 2


# ---------------------------------------------------------------------------------------------- typed errors


async def test_a_produce_answer_that_is_not_retriable_fails_the_send_with_its_typed_error(kafka, proxy, topic_name):
    await asyncio.to_thread(create_topic, kafka.bootstrap, topic_name)
    proxy.inject(ApiKey.PRODUCE, Errors.TOPIC_AUTHORIZATION_FAILED)
    async with Producer(proxy.bootstrap, linger_ms=0, **FAST) as producer:
        delivery = await producer.send(topic_name, b"x")
        with pytest.raises(TopicAuthorizationFailedError) as failed:
            await delivery
    assert failed.value.code == Errors.TOPIC_AUTHORIZATION_FAILED and failed.value.request == ApiKey.PRODUCE


async def test_an_unknown_code_keeps_its_number(kafka, proxy, topic_name):
    await asyncio.to_thread(create_topic, kafka.bootstrap, topic_name)
    proxy.inject(ApiKey.LIST_OFFSETS, 999)
    tp = TopicPartition(topic_name, 0)
    async with Consumer(bootstrap_servers=proxy.bootstrap, **FAST) as consumer:
        with pytest.raises(UnknownServerError) as failed:
            await consumer.end_offsets([tp])
    assert failed.value.code == 999 and "999" in str(failed.value)


async def test_a_group_authorization_failure_reaches_the_consumer(kafka, proxy, topic_name):
    await asyncio.to_thread(create_topic, kafka.bootstrap, topic_name)
    proxy.inject(ApiKey.JOIN_GROUP, Errors.GROUP_AUTHORIZATION_FAILED)
    async with Consumer(topic_name, bootstrap_servers=proxy.bootstrap, group_id=f"g-{topic_name}", **FAST) as consumer:
        with pytest.raises(GroupAuthorizationFailedError):
            async with asyncio.timeout(DEADLINE):
                await consumer.getmany(timeout_ms=100)


@pytest.mark.parametrize("api_key, code, error", [
    (ApiKey.END_TXN, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TransactionalIdAuthorizationFailedError),
    (ApiKey.ADD_PARTITIONS_TO_TXN, Errors.INVALID_TXN_STATE, InvalidTxnStateError),
])
async def test_transactional_answers_java_treats_as_fatal_are_fatal(kafka, proxy, topic_name, api_key, code, error):
    await asyncio.to_thread(create_topic, kafka.bootstrap, topic_name)
    proxy.inject(api_key, code)
    async with Producer(proxy.bootstrap, transactional_id=f"t-{topic_name}", linger_ms=0, **FAST) as producer:
        producer.begin_transaction()
        delivery = await producer.send(topic_name, b"x")
        with pytest.raises(error) as failed:
            async with asyncio.timeout(DEADLINE):
                await producer.commit_transaction()
        assert failed.value.fatal and not failed.value.abortable and failed.value.code == code
        delivery.cancel()
