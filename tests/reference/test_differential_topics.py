"""Requests that name topics or partitions a broker does not have, on Weir and on Apache Kafka."""

import asyncio
import time

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import add_partitions_to_txn, metadata
from tests.reference.differential import Deviation, codes, differential
from tests.reference.wire import V_ADD_PARTITIONS

TOPIC, TXN, GROUP = "known", "known-txn", "known-group"
NEVER_CREATED = "never-created"

_AUTO_CREATE = ("Weir creates a topic a Produce names when auto.create.topics.enable is true; Kafka "
                "creates topics only for Metadata. Clients send Metadata before producing, so they see "
                "no difference; Weir's raw-wire tests (tests/integration/test_bad_input.py, "
                "test_durability.py) produce to topics they never created. To align: allow_create=False "
                "in broker/handlers/produce.py and a Metadata or CreateTopics call in those tests.")
_UNKNOWN_TOPIC_PRODUCE = "produce to a topic never created.responses[0].partition_responses[0]"
KNOWN_DEVIATIONS = {
    f"{_UNKNOWN_TOPIC_PRODUCE}.error_code": Deviation(Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NONE, _AUTO_CREATE),
    f"{_UNKNOWN_TOPIC_PRODUCE}.base_offset": Deviation(-1, 0, _AUTO_CREATE),
    f"{_UNKNOWN_TOPIC_PRODUCE}.log_start_offset": Deviation(-1, 0, _AUTO_CREATE),
}


async def unknown_topics_and_partitions(wire, t):
    await wire.create_topic(TOPIC, partitions=2)
    await wire.find_coordinator(TXN, "transaction")
    await wire.find_coordinator(GROUP, "group")
    t.add("produce to partition 5 of 2", await wire.produce(TOPIC, [b"x"], partition=5))
    answer = t.add("init", await wire.init_producer_id(TXN))
    pid, epoch = answer.producer_id, answer.producer_epoch
    t.add("add an unknown topic with known partitions", await wire.connection.request(
        ApiKey.ADD_PARTITIONS_TO_TXN, V_ADD_PARTITIONS, add_partitions_to_txn.REQUEST(
            v3_and_below_transactional_id=TXN, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[add_partitions_to_txn.Topic(name="no-such-topic", partitions=[0]),
                                 add_partitions_to_txn.Topic(name=TOPIC, partitions=[0, 1])])))
    t.add("add partition 7 of 2", await wire.add_partitions(TXN, pid, epoch, TOPIC, partitions=(7,)))
    t.add("add offsets", await wire.add_offsets(TXN, pid, epoch, GROUP))
    t.add("txn offset commit for an unknown topic", await wire.txn_offset_commit(TXN, GROUP, pid, epoch,
                                                                                 "no-such-topic", 5))
    t.add("end", await wire.end_txn(TXN, pid, epoch, False))
    t.add("produce to a topic never created", await wire.produce(NEVER_CREATED, [b"x"]))


async def test_unknown_topics_and_partitions(any_broker, kafka_broker):
    def facts(steps):
        assert codes(steps["produce to partition 5 of 2"]) == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
        assert sorted(codes(steps["add an unknown topic with known partitions"])) == [
            Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.OPERATION_NOT_ATTEMPTED, Errors.OPERATION_NOT_ATTEMPTED]
        assert codes(steps["add partition 7 of 2"]) == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
        assert codes(steps["txn offset commit for an unknown topic"]) == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
        assert codes(steps["produce to a topic never created"]) == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
    await differential(any_broker, kafka_broker, unknown_topics_and_partitions, facts=facts,
                       deviations=KNOWN_DEVIATIONS)


async def metadata_auto_creates(wire, t):
    """The Metadata request that auto-creates a topic, then the answers until the topic is ready."""
    topic = "auto-created-by-metadata"

    async def ask() -> dict:
        answer = await wire.connection.request(ApiKey.METADATA, 12, metadata.REQUEST(
            topics=[metadata.RequestTopic(name=topic)], allow_auto_topic_creation=True))
        found = answer.topics[0]
        return {"error_code": found.error_code, "partitions": len(found.partitions)}

    t.add("the request that creates it", await ask())
    give_up = time.monotonic() + wire.deadline
    while (ready := await ask())["error_code"] != Errors.NONE:  # Kafka's controller creates it meanwhile
        assert ready["error_code"] in (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.LEADER_NOT_AVAILABLE), ready
        assert time.monotonic() < give_up, ready
        await asyncio.sleep(0.05)
    t.add("once ready", ready)


async def test_metadata_answers_the_request_that_auto_creates_a_topic_as_kafka(any_broker, kafka_broker):
    # librdkafka's idempotent producer relies on it: after this answer it asks again on its new
    # connection and gets its producer id at once; a ready topic at once made it wait 500 ms.
    def facts(steps):
        assert steps["the request that creates it"] == {"error_code": Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                                        "partitions": 0}
        assert steps["once ready"] == {"error_code": Errors.NONE, "partitions": 1}
    await differential(any_broker, kafka_broker, metadata_auto_creates, facts=facts)
