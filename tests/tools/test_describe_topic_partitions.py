"""DescribeTopicPartitions (KIP-966), which kafka-topics --describe uses (it falls back to Metadata,
printing "Elr: N/A", only when a broker lacks it): the same paging answers from each broker."""

import uuid

from confluent_kafka.admin import NewTopic

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_topic_partitions as msg
from weir.protocol.primitives import ZERO_UUID
from tests.tools.tools import create_topics


async def ask(broker, *names, limit=2000, cursor=None):
    connection = await Connection.open("127.0.0.1", broker.port)
    try:
        return await connection.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, msg.REQUEST(
            topics=[msg.TopicRequest(name=n) for n in names], response_partition_limit=limit,
            cursor=None if cursor is None else msg.Cursor(topic_name=cursor[0], partition_index=cursor[1])))
    finally:
        await connection.close()


def pages(answer):
    return ([(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in answer.topics],
            None if answer.next_cursor is None else (answer.next_cursor.topic_name, answer.next_cursor.partition_index))


async def test_describe_topic_partitions_pages_by_partition_count(any_broker):
    prefix = f"dtp-{uuid.uuid4().hex[:6]}"
    a, b, missing = f"{prefix}-a", f"{prefix}-b", f"{prefix}-missing"
    create_topics(any_broker.bootstrap, NewTopic(a, 3), NewTopic(b, 2))

    whole = await ask(any_broker, b, a, missing)
    assert pages(whole) == ([(a, 0, [0, 1, 2]), (b, 0, [0, 1]), (missing, Errors.UNKNOWN_TOPIC_OR_PARTITION, [])],
                            None)
    first = whole.topics[0].partitions[0]
    assert (first.leader_id, first.replica_nodes, first.isr_nodes, first.eligible_leader_replicas,
            first.last_known_elr, first.offline_replicas) == (1, [1], [1], [], [], [])
    assert whole.topics[0].topic_id != ZERO_UUID and whole.topics[2].topic_id == ZERO_UUID
    assert whole.topics[0].topic_authorized_operations > 0  # no authorizer: every operation

    assert pages(await ask(any_broker, a, b, limit=2)) == ([(a, 0, [0, 1])], (a, 2))
    assert pages(await ask(any_broker, a, b, limit=2, cursor=(a, 2))) == ([(a, 0, [2]), (b, 0, [0])], (b, 1))
    assert pages(await ask(any_broker, a, b, limit=3)) == ([(a, 0, [0, 1, 2])], (b, 0))
    assert pages(await ask(any_broker, a, b, cursor=(b, 1))) == ([(b, 0, [1])], None)
    # the cursor's topic must be among those named, and its partition not negative
    assert pages(await ask(any_broker, a, cursor=(b, 0))) == ([(a, Errors.INVALID_REQUEST, [])], None)
    assert pages(await ask(any_broker, a, cursor=(a, -1))) == ([(a, Errors.INVALID_REQUEST, [])], None)
    # no names: every topic, in name order (here from the cursor on)
    listed, _ = pages(await ask(any_broker, cursor=(a, 1)))
    assert listed[:2] == [(a, 0, [1, 2]), (b, 0, [0, 1])]
