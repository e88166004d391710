"""PartitionLane's ordering and failure rules, against a leader that checks sequences as Kafka's does.

The fake leader answers on one connection in request order and applies the broker's
rules for an idempotent producer: a batch is appended only at the expected sequence,
a batch it already holds (one of the last five) is a DUPLICATE_SEQUENCE_NUMBER, any
other sequence is OUT_OF_ORDER_SEQUENCE_NUMBER. Tests inject one error per request.
The real-broker side (both brokers) is in test_transactions.py.
"""

import asyncio

import pytest

from weir.client.errors import KafkaConnectionError, error_for
from weir.client.types import TopicPartition
from weir.pipeline.produce_lane import PartitionLane, Shipped
from weir.protocol import records as rec
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import produce
from weir.protocol.record_builder import BatchBuilder

TP = TopicPartition("t", 0)
OutOfOrderSequenceNumberError = error_for(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)


class FakeLeader:
    """One partition's log and the connection to it: answers come back in order, after ``delay``."""

    def __init__(self, faults: dict[int, int] | None = None, delay: float = 0.001):
        self.faults = dict(faults or {})  # request number -> error code to answer instead of appending
        self.delay = delay
        self.log: list[int] = []  # base sequences appended, in order
        self.next_sequence = 0
        self.requests = 0
        self.outstanding = 0
        self.most_outstanding = 0
        self.closed = False
        self._answers: asyncio.Queue = asyncio.Queue()
        self._worker = asyncio.get_running_loop().create_task(self._answer())

    def version_for(self, api_key, highest=None):
        assert api_key == ApiKey.PRODUCE
        return 9

    def submit(self, api_key, version, body):
        if self.closed:
            raise KafkaConnectionError("closed")
        data = body.topic_data[0].partition_data[0].records
        header, _records = rec.decode_batch(data)
        number = self.requests
        self.requests += 1
        self.outstanding += 1
        self.most_outstanding = max(self.most_outstanding, self.outstanding)
        future = asyncio.get_running_loop().create_future()
        self._answers.put_nowait((number, header, future))
        return future

    async def drain(self):
        pass

    async def close(self):
        self.closed = True

    async def _answer(self):
        while True:
            number, header, future = await self._answers.get()
            await asyncio.sleep(self.delay)
            self.outstanding -= 1
            code = self.faults.pop(number, None)
            if code is None:
                code = self._append(header)
            future.set_result(produce.RESPONSE(responses=[produce.TopicResponse(name=TP.topic, partition_responses=[
                produce.PartitionResponse(index=TP.partition, error_code=code)])]))

    def _append(self, header) -> int:
        if header.base_sequence == self.next_sequence:
            self.log.append(header.base_sequence)
            self.next_sequence += header.last_offset_delta + 1
            return Errors.NONE
        if header.base_sequence in self.log[-5:]:
            return Errors.DUPLICATE_SEQUENCE_NUMBER
        return Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


class FakeCluster:
    request_timeout = 5.0
    retry_backoff = 0.001

    def __init__(self, leader: FakeLeader):
        self.leader_connection = leader
        self.refreshes = 0

    async def partitions_for(self, topic):
        return 1

    def leader(self, topic, partition):
        return 1

    async def connection(self, node):
        return self.leader_connection

    async def refresh(self, topics):
        self.refreshes += 1


def batches(count: int, records_each: int = 3) -> list[Shipped]:
    out, sequence = [], 0
    for _ in range(count):
        builder = BatchBuilder()
        for n in range(records_each):
            builder.append(0, None, f"{sequence + n}".encode())
        data = builder.build(producer_id=1, producer_epoch=0, base_sequence=sequence, transactional=True)
        out.append(Shipped(data, records_each, asyncio.get_running_loop().create_future()))
        sequence += records_each
    return out


async def run_lane(leader: FakeLeader, count: int) -> tuple[PartitionLane, list[Shipped]]:
    lane = PartitionLane(FakeCluster(leader), TP, "txn", produce_timeout_ms=5000)
    shipped = batches(count)
    for one in shipped:
        lane.push(one)
    await asyncio.gather(*(s.acked for s in shipped), return_exceptions=True)
    return lane, shipped


async def test_up_to_five_batches_are_in_flight_and_appended_in_sequence_order():
    leader = FakeLeader()
    lane, shipped = await run_lane(leader, 23)
    assert all(s.acked.result() is None for s in shipped)
    assert leader.log == [3 * n for n in range(23)]
    assert leader.most_outstanding == lane.most_in_flight == 5
    assert leader.requests == 23  # nothing resent


@pytest.mark.parametrize("code", [Errors.NOT_LEADER_OR_FOLLOWER, Errors.REQUEST_TIMED_OUT])
async def test_a_retriable_error_resends_the_window_from_the_failed_batch_with_its_sequence(code):
    # request 6 is the 7th batch (sequence 18): the broker rejects it; the batches behind it in the window
    # get OUT_OF_ORDER_SEQUENCE_NUMBER from the broker, and the lane resends them all in order
    leader = FakeLeader(faults={6: code})
    lane, shipped = await run_lane(leader, 12)
    assert all(s.acked.result() is None for s in shipped)
    assert leader.log == [3 * n for n in range(12)]
    assert leader.requests > 12 and lane.failure is None


async def test_a_batch_written_but_unanswered_is_acknowledged_as_a_duplicate_when_resent():
    leader = FakeLeader()
    real_append = leader._append
    lost_once = []

    def append_then_lose_the_answer(header):
        code = real_append(header)
        if header.base_sequence == 9 and not lost_once:
            lost_once.append(code)
            return Errors.REQUEST_TIMED_OUT  # written, but the producer hears a retriable error
        return code
    leader._append = append_then_lose_the_answer
    _lane, shipped = await run_lane(leader, 8)
    assert all(s.acked.result() is None for s in shipped)
    assert leader.log == [3 * n for n in range(8)]  # once each, in order


async def test_a_gap_fails_the_lane_and_nothing_after_it_is_written():
    # the broker answers OUT_OF_ORDER_SEQUENCE_NUMBER to the oldest unacknowledged batch (sequence 12) although
    # every batch before it was acknowledged: a gap, which the lane must not paper over by writing on
    leader = FakeLeader(faults={4: Errors.OUT_OF_ORDER_SEQUENCE_NUMBER})
    lane, shipped = await run_lane(leader, 10)
    assert [s.acked.exception() is None for s in shipped[:4]] == [True] * 4
    assert all(isinstance(s.acked.exception(), OutOfOrderSequenceNumberError) for s in shipped[4:])
    assert leader.log == [0, 3, 6, 9]  # batches behind the gap were refused by the broker, none resent
    assert isinstance(lane.failure, OutOfOrderSequenceNumberError)
    with pytest.raises(OutOfOrderSequenceNumberError):
        lane.push(batches(1)[0])  # a failed lane takes no more batches


async def test_a_fenced_producer_fails_the_lane():
    leader = FakeLeader(faults={0: Errors.PRODUCER_FENCED})
    lane, shipped = await run_lane(leader, 3)
    assert all(s.acked.exception() is not None for s in shipped)
    assert leader.log == [] and lane.failure is not None


async def test_a_lost_connection_resends_the_window_on_a_new_one():
    leader = FakeLeader(delay=0.01)
    cluster = FakeCluster(leader)
    lane = PartitionLane(cluster, TP, "txn", produce_timeout_ms=5000)
    shipped = batches(10)
    for one in shipped[:6]:
        lane.push(one)
    await shipped[0].acked
    # the connection drops with answers outstanding; a fresh leader connection holds the same log
    fresh = FakeLeader()
    fresh.log, fresh.next_sequence = leader.log, leader.next_sequence
    leader.closed = True
    leader._worker.cancel()
    cluster.leader_connection = fresh
    for future in [answer for _s, answer in lane.in_flight]:
        future.set_exception(KafkaConnectionError("connection lost"))
    for one in shipped[6:]:
        lane.push(one)
    await asyncio.gather(*(s.acked for s in shipped))
    assert fresh.log == [3 * n for n in range(10)]
    assert cluster.refreshes >= 1
