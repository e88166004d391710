"""Idempotent delivery through a broker kill -9: every acknowledged record once, in order,
against Weir and the reference Apache Kafka alike."""

import asyncio
import os
import signal

from weir.client.producer import Producer
from tests.client.test_producer import read_back
from tests.support.topics import create_topic
from tests.support.waiting import wait_until_async

RECORDS = 6000


def stopped(pid: int) -> bool:
    """The process is in state T (stopped by SIGSTOP)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "T"


async def test_idempotent_producer_survives_broker_kill_without_duplicates(any_broker_to_kill, topic_name):
    broker = any_broker_to_kill
    await asyncio.to_thread(create_topic, broker.bootstrap, topic_name, 2)
    async with Producer(broker.bootstrap, linger_ms=1, batch_size=2048, request_timeout_ms=3000,
                        retry_backoff_ms=50) as producer:
        # A first record acknowledged on each partition: until then a partition has one batch in
        # flight (its first goes alone), and the kill below waits for more.
        deliveries = [await producer.send(topic_name, str(i).encode(), partition=i) for i in range(2)]
        await asyncio.wait_for(asyncio.gather(*deliveries), 30)
        frozen_at, killed = None, False
        for i in range(2, RECORDS):
            deliveries.append(await producer.send(topic_name, str(i).encode(), partition=i % 2))
            if i % 100 == 0:
                await asyncio.sleep(0)  # let the sender run between bursts
            if i == RECORDS // 3:
                # Freeze the broker, so no request outstanding from now on gets its answer...
                os.kill(broker.process.pid, signal.SIGSTOP)
                await wait_until_async(lambda: stopped(broker.process.pid), "the broker process stopped")
                frozen_at = producer.sender.requests
            # ...and kill it once a request written after the freeze is outstanding, or every
            # in-flight slot is taken (then none can be written: against Kafka, waiting for a
            # new request alone hung with the slots full and the broker frozen).
            if frozen_at is not None and not killed and (
                    producer.sender.requests > frozen_at
                    or producer.sender.requests_in_flight >= producer.sender.max_in_flight):
                broker.kill()
                await asyncio.to_thread(broker.start)
                killed = True
        acked = await asyncio.wait_for(asyncio.gather(*deliveries), 60)
        assert killed and producer.sender.retries  # the batches in flight at the kill went again
    got = await asyncio.to_thread(read_back, broker.bootstrap, topic_name, 2, RECORDS)
    values = {}
    for (partition, _offset), (_key, value, _headers, _ts) in sorted(got.items()):
        values.setdefault(partition, []).append(int(value))
    assert values[0] == list(range(0, RECORDS, 2))  # each once, in send order
    assert values[1] == list(range(1, RECORDS, 2))
    for i, metadata in enumerate(acked):
        assert got[(metadata.partition, metadata.offset)][1] == str(i).encode()


async def test_a_real_sequence_gap_bumps_the_epoch_and_delivers_once(broker, topic_name):
    """The broker refuses a batch whose sequence skips ahead (OUT_OF_ORDER_SEQUENCE with nothing
    earlier pending): the producer bumps its epoch (KIP-360), restarts sequences and delivers —
    where aiokafka's producer stays stuck (its issue 1017)."""
    async with Producer(broker.bootstrap, linger_ms=0) as producer:
        first = await producer.send_and_wait(topic_name, b"before", partition=0)
        epoch = producer.sender.identity.producer_epoch
        state = next(iter(producer.sender._sequences.values()))
        state.next_sequence += 5  # as if five records had been lost between us and the log
        after = await asyncio.wait_for(producer.send_and_wait(topic_name, b"after", partition=0), 20)
        assert producer.sender.identity.producer_epoch == epoch + 1
        again = await producer.send_and_wait(topic_name, b"again", partition=0)
    assert (first.offset, after.offset, again.offset) == (0, 1, 2)
    got = await asyncio.to_thread(read_back, broker.bootstrap, topic_name, 1, 3)
    assert [got[(0, o)][1] for o in range(3)] == [b"before", b"after", b"again"]
