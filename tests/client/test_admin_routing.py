"""Admin's retries on coordinator errors, with a scripted cluster in place of brokers
(a real broker never answers NOT_COORDINATOR on one node)."""

import pytest

from weir.client import Admin
from weir.client.admin import NewTopic
from weir.client.cluster import Cluster
from weir.client.errors import (CoordinatorLoadInProgressError, GroupAuthorizationFailedError, KafkaTimeoutError,
                                TopicAlreadyExistsError)
from weir.protocol.errors import Errors
from weir.protocol.messages import create_topics, describe_groups, describe_transactions


class ScriptedCluster(Cluster):
    """Coordinator lookups and answers from lists; records where each request went (the call path,
    Cluster.call, is the real one)."""

    def __init__(self, coordinators: list[int], answers: list):
        super().__init__("127.0.0.1:1", retry_backoff_ms=1)
        self.controller_id = 0
        self.coordinators = coordinators
        self.answers = answers
        self.cached: int | None = None
        self.sent_to: list[int] = []
        self.requests: list = []
        self.forgotten = 0

    async def find_coordinator_once(self, key_type, key):
        if self.cached is None:
            self.cached = self.coordinators.pop(0)
        return self.cached

    async def coordinator(self, key_type, key, *, deadline=None):
        return await self.find_coordinator_once(key_type, key)

    async def refresh_once(self, topics, *, allow_auto_create=False):
        self.controller_id = 0  # Metadata names the controller again

    def forget_coordinator(self, key_type, key):
        self.cached = None
        self.forgotten += 1

    async def send(self, node_id, api_key, build, *, highest=None, timeout=None, transaction_version=1):
        self.requests.append(build(0))
        self.sent_to.append(node_id)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    async def close(self):
        pass


def group_answer(code: int, state: str = "Stable"):
    return describe_groups.RESPONSE(groups=[describe_groups.Group(
        error_code=code, group_id="g", group_state=state, protocol_type="consumer", protocol_data="range",
        members=[])])


def admin_over(cluster, **settings) -> Admin:
    admin = Admin("127.0.0.1:1", retry_backoff_ms=1, **settings)
    admin.cluster = cluster
    return admin


async def test_not_coordinator_finds_the_new_coordinator_and_load_in_progress_waits():
    cluster = ScriptedCluster([1, 2], [group_answer(Errors.NOT_COORDINATOR),
                                       group_answer(Errors.COORDINATOR_LOAD_IN_PROGRESS), group_answer(0)])
    described = (await admin_over(cluster).describe_groups(["g"]))["g"]
    assert (described.state, described.coordinator_id) == ("Stable", 2)
    assert cluster.sent_to == [1, 2, 2]
    assert cluster.forgotten == 1  # only NOT_COORDINATOR means the coordinator moved


async def test_transaction_coordinator_moves_are_followed_too():
    moved = describe_transactions.RESPONSE(transaction_states=[describe_transactions.TransactionState(
        error_code=Errors.COORDINATOR_NOT_AVAILABLE, transactional_id="t", transaction_state="", topics=[])])
    found = describe_transactions.RESPONSE(transaction_states=[describe_transactions.TransactionState(
        error_code=0, transactional_id="t", transaction_state="Empty", transaction_timeout_ms=60000,
        transaction_start_time_ms=-1, producer_id=4, producer_epoch=0, topics=[])])
    cluster = ScriptedCluster([3, 5], [moved, found])
    described = (await admin_over(cluster).describe_transactions(["t"]))["t"]
    assert (described.state, described.producer_id, described.coordinator_id) == ("Empty", 4, 5)
    assert cluster.sent_to == [3, 5]


async def test_retries_end_at_the_api_timeout():
    cluster = ScriptedCluster([1] * 1000, [group_answer(Errors.COORDINATOR_LOAD_IN_PROGRESS)])
    with pytest.raises(KafkaTimeoutError) as timed_out:
        await admin_over(cluster, default_api_timeout_ms=100).describe_groups(["g"])
    assert isinstance(timed_out.value.last_cause, CoordinatorLoadInProgressError)  # what kept it waiting
    assert len(cluster.sent_to) > 1


async def test_a_non_retriable_answer_is_raised_at_once():
    cluster = ScriptedCluster([1], [group_answer(Errors.GROUP_AUTHORIZATION_FAILED)])
    with pytest.raises(GroupAuthorizationFailedError):
        await admin_over(cluster).describe_groups(["g"])
    assert cluster.sent_to == [1]


def created(*results):
    return create_topics.RESPONSE(topics=[create_topics.TopicResult(name=n, error_code=c, error_message=None)
                                          for n, c in results])


async def test_create_topics_retries_only_the_topics_that_got_a_retriable_answer():
    cluster = ScriptedCluster([], [created(("a", 0), ("b", Errors.NOT_CONTROLLER), ("c", Errors.TOPIC_ALREADY_EXISTS)),
                                   created(("b", 0))])
    admin = admin_over(cluster)
    with pytest.raises(TopicAlreadyExistsError, match="topic c"):
        await admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1), NewTopic("c", 1, 1)])
    assert [[t.name for t in r.topics] for r in cluster.requests] == [["a", "b", "c"], ["b"]]
