"""Found by the Spark orders job against Apache Kafka: right after a (re)start, Kafka answers FindCoordinator
for a transactional id with COORDINATOR_NOT_AVAILABLE until its transaction state topic is loaded. The
client's transaction requests (here: fencing an id, as the sink's recovery does) must retry that, as
Kafka's producer does, not fail the query."""

import asyncio
from types import SimpleNamespace

from weir.client.cluster import Cluster
from weir.client.errors import error_for
from weir.client import PreparedTxnState, fence_transactional_id
from weir.protocol.errors import Errors


class CoordinatorLoadingCluster(Cluster):
    """FindCoordinator fails with ``error`` ``failures`` times, then node 1 answers InitProducerId (the
    call path is the real one)."""

    def __init__(self, error: Errors, failures: int):
        super().__init__("localhost:1", retry_backoff_ms=1)  # a broker without features: version 1
        self.error, self.failures, self.finds, self.forgotten = error, failures, 0, 0

    async def find_coordinator_once(self, key_type, key):
        self.finds += 1
        if self.finds <= self.failures:
            raise error_for(self.error)("not yet")
        return 1

    async def send(self, node, api_key, build, **_):
        return SimpleNamespace(error_code=Errors.NONE, producer_id=7, producer_epoch=3)

    def forget_coordinator(self, key_type, key):
        self.forgotten += 1

    async def any_connection(self):
        return SimpleNamespace(version_for=lambda api_key, highest=None, **_: 4)


def test_find_coordinator_answers_that_kafka_retries_are_retried():
    for error in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS):
        cluster = CoordinatorLoadingCluster(error, failures=3)
        fenced = asyncio.run(fence_transactional_id(cluster, "weir-sink-q-0", max_block_ms=10000))
        assert fenced == PreparedTxnState(7, 3)
        assert cluster.finds == 4


def test_a_find_coordinator_answer_that_is_not_retriable_still_fails():
    cluster = CoordinatorLoadingCluster(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, failures=1)
    try:
        asyncio.run(fence_transactional_id(cluster, "weir-sink-q-0", max_block_ms=10000))
    except error_for(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED):
        pass
    else:
        raise AssertionError("an authorization failure must not be retried")
