"""Metadata requests naming topics by id or by a null name, on the wire (v10-v12)."""

import pytest

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import create_topics, metadata
from weir.protocol.primitives import ZERO_UUID

UNKNOWN_ID = bytes(range(1, 17))


@pytest.fixture
async def conn(shared_broker):
    connection = await Connection.open("127.0.0.1", shared_broker.port)
    yield connection
    await connection.close()


async def create(conn, name):
    answer = await conn.request(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(timeout_ms=5000, topics=[
        create_topics.CreatableTopic(name=name, num_partitions=2, replication_factor=1, assignments=[],
                                     configs=[])]))
    assert answer.topics[0].error_code == Errors.NONE


async def ask(conn, version, *topics):
    return await conn.request(ApiKey.METADATA, version, metadata.REQUEST(
        topics=list(topics), allow_auto_topic_creation=False))


def invalid_request_answer(answer, expected_topics):
    """Kafka's MetadataRequest.getErrorResponse: every asked topic, INVALID_REQUEST, no brokers."""
    assert answer.brokers == [] and answer.cluster_id is None and answer.controller_id == -1
    assert [(t.error_code, t.name, t.topic_id, t.is_internal, t.partitions) for t in answer.topics] == [
        (Errors.INVALID_REQUEST, name, topic_id, False, []) for name, topic_id in expected_topics]


@pytest.mark.parametrize("version", [10, 11])
async def test_null_topic_name_below_v12_is_an_invalid_request(conn, topic_name, version):
    await create(conn, topic_name)
    # before the fix: the response failed to encode and the connection closed
    answer = await ask(conn, version, metadata.RequestTopic(name=topic_name),
                       metadata.RequestTopic(name=None))
    invalid_request_answer(answer, [(topic_name, ZERO_UUID), ("", ZERO_UUID)])
    # the connection carries on
    answer = await ask(conn, version, metadata.RequestTopic(name=topic_name))
    assert [(t.error_code, t.name, len(t.partitions)) for t in answer.topics] == [(Errors.NONE, topic_name, 2)]


@pytest.mark.parametrize("version", [10, 11])
async def test_topic_id_below_v12_is_an_invalid_request(conn, topic_name, version):
    await create(conn, topic_name)
    answer = await ask(conn, version, metadata.RequestTopic(name=topic_name, topic_id=UNKNOWN_ID))
    invalid_request_answer(answer, [(topic_name, UNKNOWN_ID)])


async def test_v12_looks_topics_up_by_id(conn, topic_name):
    await create(conn, topic_name)
    by_name = await ask(conn, 12, metadata.RequestTopic(name=topic_name))
    topic_id = by_name.topics[0].topic_id
    assert topic_id != ZERO_UUID
    answer = await ask(conn, 12, metadata.RequestTopic(name=None, topic_id=topic_id),
                       metadata.RequestTopic(name=None, topic_id=UNKNOWN_ID))
    assert [(t.error_code, t.name, t.topic_id, len(t.partitions)) for t in answer.topics] == [
        (Errors.NONE, topic_name, topic_id, 2), (Errors.UNKNOWN_TOPIC_ID, None, UNKNOWN_ID, 0)]
    assert answer.brokers and answer.cluster_id
