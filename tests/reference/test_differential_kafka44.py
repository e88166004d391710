"""What Kafka 4.4 changed on the wire, on Weir and on Apache Kafka 4.4.0: ApiVersions v5's check of
the cluster and node a client names (KIP-1242), DeleteGroups v3's message per group, and the topic
setting max.decompressed.message.bytes."""

import asyncio
import time

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.compression import Compression
from weir.protocol.errors import Errors
from weir.protocol.messages import api_versions, delete_groups, describe_configs, join_group, metadata, produce
from tests.log.poison import batch, record
from tests.reference.differential import codes, differential

#: (step, cluster id to name -- "ours", "other" or None -- and node id)
IDENTITIES = [
    ("names neither", None, -1),
    ("names this cluster and node", "ours", 1),
    ("names another cluster", "other", 1),
    ("names another node", "ours", 7),
    ("names a node without a cluster", None, 1),
    ("names a cluster without a node", "ours", -1),
]


def _keys(answer):
    """An ApiVersions answer reduced to what both brokers must agree on: its error and whether it
    lists any key (the lists themselves differ: Weir serves fewer APIs than Kafka)."""
    return {"error_code": answer.error_code, "lists keys": bool(answer.api_keys),
            "lists finalized features": bool(answer.finalized_features)}


async def api_versions_v5_identity(wire, t):
    ours = (await wire.connection.request(ApiKey.METADATA, 12, metadata.REQUEST(
        topics=[], allow_auto_topic_creation=False))).cluster_id
    for step, cluster, node in IDENTITIES:
        # Each on a connection of its own: the first request of a connection, as clients send it.
        connection = await Connection.open("127.0.0.1", wire.broker.port, client_id="weir-differential")
        try:
            answer = await connection.request(ApiKey.API_VERSIONS, 5, api_versions.REQUEST(
                client_software_name="weir-differential", client_software_version="1",
                cluster_id={"ours": ours, "other": "A" * 22, None: None}[cluster], node_id=node))
            t.add(step, _keys(answer))
        finally:
            await connection.close()


async def test_api_versions_v5_checks_the_cluster_and_node_a_client_names(any_broker, kafka_broker):
    def facts(steps):
        assert steps["names neither"] == steps["names this cluster and node"] == {
            "error_code": Errors.NONE, "lists keys": True, "lists finalized features": True}
        refused = {"lists keys": False, "lists finalized features": False}
        for step in ("names another cluster", "names another node"):
            assert steps[step] == {"error_code": Errors.REBOOTSTRAP_REQUIRED, **refused}
        for step in ("names a node without a cluster", "names a cluster without a node"):
            assert steps[step] == {"error_code": Errors.INVALID_REQUEST, **refused}
    await differential(any_broker, kafka_broker, api_versions_v5_identity, facts=facts)


async def _join_and_stay(wire, group):
    """A classic member that joined (and so keeps the group non-empty until its session ends)."""
    def request(member_id):
        return join_group.REQUEST(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                  member_id=member_id, protocol_type="consumer",
                                  protocols=[join_group.Protocol(name="range", metadata=b"")])
    answer = await wire.connection.request(ApiKey.JOIN_GROUP, 5, request(""))
    assert answer.error_code == Errors.MEMBER_ID_REQUIRED
    member = answer.member_id
    give_up = time.monotonic() + wire.deadline
    while (answer := await wire.connection.request(ApiKey.JOIN_GROUP, 5, request(member))).error_code != 0:
        assert answer.error_code in (Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.REBALANCE_IN_PROGRESS)
        assert time.monotonic() < give_up, Errors(answer.error_code).name
        await asyncio.sleep(0.05)


async def delete_groups_v3(wire, t):
    topic, empty, live = "delete-groups-v3", "delete-groups-v3-offsets-only", "delete-groups-v3-live"
    await wire.find_coordinator(empty, "group")
    await wire.find_coordinator(live, "group")
    await wire.create_topic(topic)
    t.add("commit offsets of a group with no members", await wire.offset_commit(empty, topic, 1))
    await _join_and_stay(wire, live)
    for version in (2, 3):
        names = ["delete-groups-v3-never", "", live] + ([empty] if version == 3 else [])
        answer = t.add(f"delete groups v{version}", await wire.connection.request(
            ApiKey.DELETE_GROUPS, version, delete_groups.REQUEST(groups_names=names)))
        if version == 3:  # the transcript masks messages (free text); whether there is one is not
            t.add("groups with a message, v3", sorted(r.group_id for r in answer.results if r.error_message))


async def test_delete_groups_v3_answers_a_message_per_group(any_broker, kafka_broker):
    def facts(steps):
        by_group = {r["group_id"]: r for r in steps["delete groups v3"]["results"]}
        assert {group: r["error_code"] for group, r in by_group.items()} == {
            "delete-groups-v3-never": Errors.GROUP_ID_NOT_FOUND, "": Errors.GROUP_ID_NOT_FOUND,
            "delete-groups-v3-live": Errors.NON_EMPTY_GROUP, "delete-groups-v3-offsets-only": Errors.NONE}
        assert {r["group_id"]: r["error_code"] for r in steps["delete groups v2"]["results"]} == {
            "delete-groups-v3-never": Errors.GROUP_ID_NOT_FOUND, "": Errors.GROUP_ID_NOT_FOUND,
            "delete-groups-v3-live": Errors.NON_EMPTY_GROUP}
        assert steps["groups with a message, v3"] == []
    await differential(any_broker, kafka_broker, delete_groups_v3, facts=facts)


def _gzip_batch(values: list[bytes]) -> bytes:
    payload = b"".join(record(i, value) for i, value in enumerate(values))
    return batch(payload, len(values), codec=Compression.GZIP)


async def max_decompressed_message_bytes(wire, t):
    topic = "max-decompressed"
    await wire.create_topic(topic, config={"max.decompressed.message.bytes": "1000"})
    for step, values in (("a batch decompressing below the bound", [b"x" * 100] * 5),
                         ("a batch decompressing past the bound", [bytes(1000)] * 50),
                         ("a small batch after it", [b"after"])):
        answer = await wire.connection.request(ApiKey.PRODUCE, 9, produce.REQUEST(
            transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
                name=topic, partition_data=[produce.PartitionData(index=0, records=_gzip_batch(values))])]))
        t.add(step, answer)
    t.add("described", await wire.connection.request(ApiKey.DESCRIBE_CONFIGS, 4, describe_configs.REQUEST(
        resources=[describe_configs.Resource(resource_type=2, resource_name=topic,
                                             configuration_keys=["max.decompressed.message.bytes"])],
        include_synonyms=True, include_documentation=False)))


async def test_a_topic_bounds_what_a_batch_decompresses_to(any_broker, kafka_broker):
    def facts(steps):
        assert codes(steps["a batch decompressing below the bound"]) == [Errors.NONE]
        assert codes(steps["a batch decompressing past the bound"]) == [Errors.INVALID_RECORD]
        assert codes(steps["a small batch after it"]) == [Errors.NONE]
        [entry] = steps["described"]["results"][0]["configs"]
        assert (entry["value"], [(s["name"], s["value"]) for s in entry["synonyms"]]) == (
            "1000", [("max.decompressed.message.bytes", "1000"), ("max.decompressed.message.bytes", "2147483639")])
    await differential(any_broker, kafka_broker, max_decompressed_message_bytes, facts=facts)
