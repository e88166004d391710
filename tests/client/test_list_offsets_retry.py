"""ListOffsets answers a partition with a retriable error while a topic is new or a leader moves
(Apache Kafka gives LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, OFFSET_NOT_AVAILABLE): the consumer
asks again after a metadata refresh, as the Java consumer does, and raises the rest at once."""

import asyncio
from types import SimpleNamespace

import pytest

from weir.client.cluster import Cluster
from weir.client.consumer.fetcher import READ_COMMITTED, Fetcher
from weir.client.errors import KafkaTimeoutError, error_for
from weir.client.types import TopicPartition
from weir.protocol.errors import Errors


class ScriptedCluster(Cluster):
    """One broker answering ListOffsets from a script: one error code per partition and call."""

    def __init__(self, script: list[dict[int, int]], request_timeout_ms: int = 30000):
        super().__init__("localhost:1", request_timeout_ms=request_timeout_ms, retry_backoff_ms=1)
        self.script = script
        self.calls: list[list[int]] = []
        self.refreshes = 0

    async def partitions_for(self, topic, *, deadline=None):
        return 2

    def leader(self, topic, partition):
        return 0

    async def refresh_once(self, topics=None, *, allow_auto_create=False):
        self.refreshes += 1

    async def send(self, node_id, api_key, build, *, highest=None, timeout=None, transaction_version=1):
        request = build(0)
        asked = [p.partition_index for t in request.topics for p in t.partitions]
        self.calls.append(asked)
        codes = self.script[min(len(self.calls), len(self.script)) - 1]
        return SimpleNamespace(topics=[SimpleNamespace(name="t", partitions=[
            SimpleNamespace(partition_index=p, error_code=codes.get(p, 0), offset=100 + p, timestamp=-1)
            for p in asked])])


def fetcher_on(cluster):
    return Fetcher(cluster, isolation_level=READ_COMMITTED, auto_offset_reset="earliest", fetch_max_wait_ms=100,
                   fetch_min_bytes=1, fetch_max_bytes=1 << 20, max_partition_fetch_bytes=1 << 20, retry_backoff_ms=1)


def test_retriable_partition_answers_are_asked_again_after_a_refresh():
    cluster = ScriptedCluster([{0: Errors.LEADER_NOT_AVAILABLE, 1: Errors.OFFSET_NOT_AVAILABLE},
                               {1: Errors.NOT_LEADER_OR_FOLLOWER}, {}])
    found = asyncio.run(fetcher_on(cluster).list_offsets({TopicPartition("t", 0): -2, TopicPartition("t", 1): -1}))
    assert found == {TopicPartition("t", 0): (100, -1), TopicPartition("t", 1): (101, -1)}
    assert cluster.calls == [[0, 1], [0, 1], [1]]  # only what is still unanswered is asked again
    assert cluster.refreshes == 2


def test_a_non_retriable_answer_is_raised_at_once():
    cluster = ScriptedCluster([{0: Errors.TOPIC_AUTHORIZATION_FAILED}])
    with pytest.raises(error_for(Errors.TOPIC_AUTHORIZATION_FAILED)):
        asyncio.run(fetcher_on(cluster).list_offsets({TopicPartition("t", 0): -2}))
    assert len(cluster.calls) == 1


def test_a_retriable_answer_that_persists_is_raised_at_the_request_timeout():
    cluster = ScriptedCluster([{0: Errors.LEADER_NOT_AVAILABLE}], request_timeout_ms=50)
    with pytest.raises(KafkaTimeoutError) as timed_out:
        asyncio.run(fetcher_on(cluster).list_offsets({TopicPartition("t", 0): -2}))
    assert isinstance(timed_out.value.last_cause, error_for(Errors.LEADER_NOT_AVAILABLE))
    assert len(cluster.calls) > 1
