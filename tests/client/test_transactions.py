"""Our transactional producer against Weir and against Apache Kafka: the same scenario, the same answer."""

from __future__ import annotations

import asyncio

import pytest

from weir.client import Consumer, Producer, TopicPartition
from weir.client.consumer import CommitFailedError
from weir.client.errors import IllegalStateError, InvalidTxnStateError, KafkaException, ProducerFencedError
from weir.client.producer.transaction_manager import TransactionAbortedError, TxnState
from tests.client.txn_helpers import new_topic, read_committed, wait_until_no_open_transaction


async def test_committed_records_are_visible_and_aborted_ones_are_not(any_broker, topic_name):
    topic = await new_topic(any_broker.bootstrap, topic_name, 2)
    async with Producer(any_broker.bootstrap, transactional_id=f"{topic}-tx", linger_ms=1) as producer:
        with pytest.raises(IllegalStateError):
            await producer.send(topic, b"outside")  # no transaction begun
        producer.begin_transaction()
        await producer.send(topic, b"a", partition=0)
        await producer.send(topic, b"b", partition=1)
        await producer.commit_transaction()

        producer.begin_transaction()
        acked = await producer.send_and_wait(topic, b"aborted-sent", partition=0)
        unsent = await producer.send(topic, b"aborted-unsent", partition=1)
        await producer.abort_transaction()
        assert acked.offset >= 0
        assert isinstance(unsent.exception(), TransactionAbortedError)

        async with producer.transaction():
            await producer.send(topic, b"c", partition=1)
        with pytest.raises(RuntimeError):
            async with producer.transaction():
                await producer.send_and_wait(topic, b"aborted-by-exception", partition=0)
                raise RuntimeError("processing failed")
        assert producer.transaction_manager.state is TxnState.READY
    assert sorted(await read_committed(any_broker.bootstrap, topic, 2)) == [b"a", b"b", b"c"]


async def test_a_second_producer_with_the_same_id_fences_the_zombie(any_broker, topic_name):
    topic = await new_topic(any_broker.bootstrap, topic_name)
    zombie = Producer(any_broker.bootstrap, transactional_id=f"{topic}-tx")
    await zombie.start()
    try:
        zombie.begin_transaction()
        await zombie.send_and_wait(topic, b"zombie")
        async with Producer(any_broker.bootstrap, transactional_id=f"{topic}-tx") as successor:
            with pytest.raises(ProducerFencedError) as raised:
                await zombie.commit_transaction()
            assert raised.value.fatal
            assert zombie.transaction_manager.state is TxnState.FATAL_ERROR
            with pytest.raises(ProducerFencedError):
                await zombie.send(topic, b"more")
            async with successor.transaction():
                await successor.send(topic, b"successor")
    finally:
        await zombie.close()
    assert await read_committed(any_broker.bootstrap, topic) == [b"successor"]


async def test_a_timed_out_transaction_is_aborted_by_the_broker_and_commit_is_refused(any_broker, topic_name):
    """The coordinator aborts a transaction open past transaction_timeout_ms and bumps the epoch
    (both brokers, at their default transaction version 2): the producer's commit names the epoch
    one behind, a retry of an ended transaction with the other outcome, refused as INVALID_TXN_STATE,
    fatal, as for Java. (Version 1 and the abort: test_transaction_versions.py.)"""
    topic = await new_topic(any_broker.bootstrap, topic_name)
    async with Producer(any_broker.bootstrap, transactional_id=f"{topic}-tx",
                        transaction_timeout_ms=1000) as producer:
        producer.begin_transaction()
        await producer.send_and_wait(topic, b"too slow")
        await wait_until_no_open_transaction(any_broker.bootstrap, topic)
        with pytest.raises(InvalidTxnStateError):
            await producer.commit_transaction()
        assert producer.transaction_manager.state is TxnState.FATAL_ERROR
    assert await read_committed(any_broker.bootstrap, topic) == []


async def test_a_failed_batch_makes_the_transaction_abortable_and_the_abort_bumps_the_epoch(any_broker, topic_name):
    """A batch the broker refuses (MESSAGE_TOO_LARGE for the topic): commit raises it, abortable;
    the abort bumps the epoch (KIP-360, InitProducerId with the current id and epoch) and the
    next transaction commits."""
    topic = topic_name
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": any_broker.bootstrap})
    await asyncio.to_thread(lambda: admin.create_topics(
        [NewTopic(topic, 1, 1, config={"max.message.bytes": "2000"})])[topic].result(10))
    async with Producer(any_broker.bootstrap, transactional_id=f"{topic}-tx") as producer:
        identity = producer.sender.identity
        before = (identity.producer_id, identity.producer_epoch)
        producer.begin_transaction()
        await producer.send_and_wait(topic, b"small")
        too_big = await producer.send(topic, b"x" * 5000)
        with pytest.raises(KafkaException) as raised:
            await producer.commit_transaction()
        assert raised.value.abortable and isinstance(too_big.exception(), type(raised.value))
        assert producer.transaction_manager.state is TxnState.ABORTABLE_ERROR
        await producer.abort_transaction()
        assert (identity.producer_id, identity.producer_epoch) == (before[0], before[1] + 1)
        async with producer.transaction():
            await producer.send(topic, b"after")
    assert await read_committed(any_broker.bootstrap, topic) == [b"after"]


async def test_offsets_sent_with_a_stale_generation_are_refused(any_broker, topic_name):
    """KIP-447: TxnOffsetCommit v3 carries the member's generation; after a rebalance the old
    generation is refused (ILLEGAL_GENERATION), abortable, and no offset is committed."""
    topic = await new_topic(any_broker.bootstrap, topic_name, 2)
    group = f"{topic}-g"
    settings = dict(bootstrap_servers=any_broker.bootstrap, group_id=group, enable_auto_commit=False,
                    auto_offset_reset="earliest", heartbeat_interval_ms=200, session_timeout_ms=10000,
                    partition_assignment_strategy=["range"])
    first, second = Consumer(topic, **settings), Consumer(topic, **settings)
    await first.start()
    try:
        while first.group.generation_id < 0:
            await first.getmany(timeout_ms=200)
        stale = first.group_metadata()
        await second.start()

        async def poll_until_rebalanced(consumer):
            while consumer.group.generation_id <= stale.generation_id or consumer.group.rejoin_needed.is_set():
                await consumer.getmany(timeout_ms=200)
        await asyncio.wait_for(asyncio.gather(poll_until_rebalanced(first), poll_until_rebalanced(second)), 60)

        async with Producer(any_broker.bootstrap, transactional_id=f"{topic}-tx") as producer:
            producer.begin_transaction()
            with pytest.raises(CommitFailedError) as raised:
                await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 5}, stale)
            assert raised.value.abortable
            assert producer.transaction_manager.state is TxnState.ABORTABLE_ERROR
            await producer.abort_transaction()
            async with producer.transaction():  # the current generation is accepted
                await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 3}, first.group_metadata())
        assert (await first.committed(TopicPartition(topic, 0))).offset == 3
    finally:
        await second.close()
        await first.close()
