"""The sender keeps requests flowing while the caller is busy sending: a full batch leaves
from ``send()`` itself, and an answer's free slot is refilled before anyone else runs."""

import asyncio
from types import SimpleNamespace

from weir.client.producer import Producer
from weir.client.producer.accumulator import Accumulator
from weir.client.producer.sender import Sender
from weir.protocol.compression import Compression
from tests.support.topics import create_topic


async def test_a_full_batch_leaves_while_the_caller_keeps_sending(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, 1)
    async with Producer(any_broker.bootstrap, linger_ms=60000, batch_size=1024) as producer:
        await producer.send(topic_name, b"warm-up", partition=0)
        await producer.flush()  # the connection is open and the partition's leader known
        before = producer.sender.requests
        deliveries = [await producer.send(topic_name, b"x" * 100, partition=0) for _ in range(30)]
        # Nothing but send() was awaited and linger is a minute: only send() can have sent them.
        assert producer.sender.requests > before
        assert (await asyncio.wait_for(deliveries[0], 10)).offset == 1
        await producer.flush()
        assert [(await d).offset for d in deliveries] == list(range(1, 31))


class FakeConnection:
    closed = False

    def __init__(self):
        self.requests = []  # (request, future) in the order written

    def version_for(self, api_key, highest=None):
        return 9

    def submit(self, api_key, version, request):
        future = asyncio.get_running_loop().create_future()
        self.requests.append((request, future))
        return future

    async def drain(self):
        pass


class FakeCluster:
    def __init__(self, connection):
        self._connection = connection

    def leader(self, topic, partition):
        return 1

    def open_connection(self, node):
        return self._connection

    async def connection(self, node):
        return self._connection


def answer(request, base_offset):
    topic = request.topic_data[0]
    return SimpleNamespace(responses=[SimpleNamespace(name=topic.name, partition_responses=[SimpleNamespace(
        index=topic.partition_data[0].index, error_code=0, error_message=None, base_offset=base_offset,
        log_append_time_ms=-1)])])


async def test_an_answer_refills_its_slot_before_other_tasks_run():
    connection = FakeConnection()
    accumulator = Accumulator(batch_size=300, linger_ms=60000, compression=Compression.NONE,
                              buffer_memory=1 << 20)
    sender = Sender(FakeCluster(connection), accumulator, acks=-1, idempotent=True, request_timeout_ms=30000,
                    max_in_flight=5, delivery_timeout_ms=120000, retry_backoff_ms=100,
                    max_request_size=1 << 20, init_producer_id=None)
    sender.identity.producer_id, sender.identity.producer_epoch = 7, 0
    loop = asyncio.get_running_loop()
    for _ in range(9 * 2):  # two 90-byte records fill a 300-byte batch: 8 full batches, 1 open
        accumulator.append("t", 0, 0, None, b"v" * 90, None, loop.create_future(), loop)
    sender.start()
    await turns(lambda: connection.requests)
    for _ in range(20):
        await asyncio.sleep(0)
    # The partition's first batch goes alone: Kafka would take a later one first if it failed.
    assert len(connection.requests) == 1
    answer_request(connection, 0)
    await asyncio.sleep(0)  # one turn of the loop: the answer's callback runs before this task resumes
    assert len(connection.requests) == 6  # every free slot (max_in_flight 5) filled, one batch each
    answer_request(connection, 1)
    await asyncio.sleep(0)
    assert len(connection.requests) == 7
    assert [base_sequence(r) for r, _ in connection.requests] == [0, 2, 4, 6, 8, 10, 12]  # in order, none skipped
    accumulator.flushes += 1  # the open batch may go too, so the sender can finish
    close = asyncio.ensure_future(sender.close())
    for _ in range(100):
        for i in range(len(connection.requests)):
            answer_request(connection, i)
        if close.done():
            break
        await asyncio.sleep(0)
    await asyncio.wait_for(close, 5)
    assert [base_sequence(r) for r, _ in connection.requests] == [0, 2, 4, 6, 8, 10, 12, 14, 16]


async def turns(condition, limit=100):
    for _ in range(limit):
        if condition():
            return
        await asyncio.sleep(0)


def answer_request(connection, index):
    request, future = connection.requests[index]
    if not future.done():
        future.set_result(answer(request, 0))


def base_sequence(request) -> int:
    return int.from_bytes(request.topic_data[0].partition_data[0].records[53:57], "big")
