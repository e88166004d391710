"""One ACL scenario, run on Weir and on Kafka 4.4.0 alike (test_differential_acls.py): an
administrator (ANONYMOUS on PLAINTEXT, a super user) creates topics, a SCRAM user bob and ACLs;
bob then calls each API over SASL_PLAINTEXT and the answers are collected."""

from __future__ import annotations

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import (consumer_group_heartbeat, create_topics, delete_acls, delete_topics,
                                    describe_acls, describe_cluster, describe_configs,
                                    describe_groups, fetch, find_coordinator, init_producer_id, join_group,
                                    list_offsets, metadata, offset_fetch, produce)
from weir.protocol.primitives import ZERO_UUID
from weir.protocol.records import Record, encode_batch

from tests.security import acl_scenario_admin
from tests.security.acl_wire import create, delete, describe, scram_login
from tests.security.sasl_setup import add_scram_user
from tests.security.sasl_wire import SaslWire
from tests.support.waiting import wait_until

TOPIC, GROUP, CLUSTER, TXN = 2, 3, 4, 5
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8
DENY, ALLOW = 2, 3
BOB = "User:bob"
TOPICS = ("acl-read", "acl-hidden", "acl-pre-a")

#: The ACLs of the scenario (all on host *).
ACLS = [
    (TOPIC, "acl-read", LITERAL, BOB, "*", READ, ALLOW),
    (TOPIC, "acl-pre", PREFIXED, BOB, "*", WRITE, ALLOW),
    (TOPIC, "acl-pre", PREFIXED, BOB, "*", CREATE, ALLOW),
    (TOPIC, "acl-hidden", LITERAL, "User:*", "*", READ, ALLOW),
    (TOPIC, "acl-hidden", LITERAL, BOB, "*", ALL, DENY),
    (TOPIC, "*", LITERAL, "User:carol", "*", DESCRIBE, ALLOW),
    (GROUP, "g-ok", LITERAL, BOB, "*", READ, ALLOW),
    (TXN, "tx-ok", LITERAL, BOB, "*", WRITE, ALLOW),
    (TOPIC, "acl-read", LITERAL, BOB, "10.0.0.1", WRITE, ALLOW),  # another host: no effect
]


def _metadata(wire, names, auto_create=False, operations=False):
    return wire.call(ApiKey.METADATA, 12, metadata.REQUEST(
        topics=None if names is None else [metadata.RequestTopic(name=n, topic_id=ZERO_UUID) for n in names],
        allow_auto_topic_creation=auto_create, include_topic_authorized_operations=operations))


def _produce(wire, topic):
    batch = encode_batch([Record(b"v")])
    answer = wire.call(ApiKey.PRODUCE, 9, produce.REQUEST(acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
        name=topic, partition_data=[produce.PartitionData(index=0, records=batch)])]))
    return answer.responses[0].partition_responses[0].error_code


def _fetch(wire, topic):
    answer = wire.call(ApiKey.FETCH, 12, fetch.REQUEST(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[fetch.FetchTopic(topic=topic, partitions=[
            fetch.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])],
        forgotten_topics_data=[], rack_id=""))
    return answer.responses[0].partitions[0].error_code


def _list_offsets(wire, topic):
    answer = wire.call(ApiKey.LIST_OFFSETS, 7, list_offsets.REQUEST(replica_id=-1, isolation_level=0, topics=[
        list_offsets.RequestTopic(name=topic, partitions=[list_offsets.RequestPartition(partition_index=0,
                                                                                          timestamp=-1)])]))
    return answer.topics[0].partitions[0].error_code


def _coordinator(wire, key, key_type):
    answer = wire.call(ApiKey.FIND_COORDINATOR, 4, find_coordinator.REQUEST(key_type=key_type,
                                                                             coordinator_keys=[key]))
    return answer.coordinators[0].error_code


def _settled(call):
    """``call()`` again while Kafka's coordinators load (a client retries these), then its answer."""
    def settled():
        answer = call()
        return [answer] if _error(answer) not in _LOADING else None
    return wait_until(settled, "the coordinator answers")[0]


_LOADING = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def _error(answer):
    if isinstance(answer, int):
        return answer
    for name in ("coordinators", "groups"):
        for item in getattr(answer, name, None) or []:
            if item.error_code in _LOADING:
                return item.error_code
    return answer.error_code if hasattr(answer, "error_code") else 0


def _login(broker):
    try:
        return scram_login(broker.bootstrap_for("SASL_PLAINTEXT"), "bob", "bob-pw")
    except AssertionError:
        return None


def _ready(wire, names) -> bool:
    answer = _metadata(wire, list(names))
    return all(t.error_code == 0 and t.partitions and t.partitions[0].leader_id >= 0 for t in answer.topics)


def run(broker) -> dict:
    seen: dict = {}
    admin = SaslWire(broker.bootstrap_for("PLAINTEXT"))
    add_scram_user(broker.bootstrap_for("PLAINTEXT"), "bob", "bob-pw")
    admin.call(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(topics=[
        create_topics.CreatableTopic(name=name, num_partitions=1, replication_factor=1) for name in TOPICS]))
    wait_until(lambda: _ready(admin, TOPICS), "the scenario's topics have leaders")

    seen["invalid_creations"] = [create(admin, binding) for binding in (  # one request each
        (CLUSTER, "other", LITERAL, BOB, "*", ALTER, ALLOW), (TOPIC, "", LITERAL, BOB, "*", READ, ALLOW),
        (TOPIC, "x", ANY, BOB, "*", READ, ALLOW), (TOPIC, "x", MATCH, BOB, "*", READ, ALLOW),
        (TOPIC, "x", LITERAL, BOB, "*", ANY, ALLOW), (TOPIC, "x", LITERAL, BOB, "*", READ, ANY),
        (ANY, "x", LITERAL, BOB, "*", READ, ALLOW), (TOPIC, "x", LITERAL, "bob", "*", READ, ALLOW))]
    seen["created"] = create(admin, *ACLS, ACLS[0])  # the same ACL twice: both succeed, one is kept
    wait_until(lambda: len(describe(admin)[1]) == len(ACLS), "the authorizer has every ACL")
    seen["describe_all"] = describe(admin)
    seen["describe_match"] = describe(admin, TOPIC, "acl-pre-a", MATCH)
    seen["describe_match_hidden"] = describe(admin, TOPIC, "acl-hidden", MATCH)
    seen["describe_any_name"] = describe(admin, ANY, "acl-pre", ANY)
    seen["describe_literal"] = describe(admin, TOPIC, None, LITERAL)
    seen["describe_principal_deny"] = describe(admin, principal=BOB, permission=DENY)
    seen["describe_host"] = describe(admin, host="10.0.0.1")
    seen["describe_unknown_code"] = describe(admin, resource_type=42)[0]

    bob = wait_until(lambda: _login(broker), "bob logs in (Kafka's brokers learn of credentials a moment late)")
    seen["metadata_all"] = sorted(t.name for t in _metadata(bob, None).topics)
    named = _metadata(bob, ["acl-read", "acl-hidden", "acl-missing", "acl-pre-auto", "other-auto"], auto_create=True)
    # acl-pre-auto may be auto-created: Kafka answers an error while its controller creates it
    # (seen: UNKNOWN_TOPIC_OR_PARTITION), and so does Weir (metadata.py); either way not refused
    seen["metadata_named"] = sorted((t.name, "allowed" if t.name == "acl-pre-auto" and t.error_code != 29
                                     else t.error_code) for t in named.topics)
    seen["topic_operations"] = [(t.name, t.topic_authorized_operations)
                                for t in _metadata(bob, ["acl-read"], operations=True).topics]
    seen["produce"] = {topic: _produce(bob, topic) for topic in ("acl-read", "acl-pre-a", "acl-hidden")}
    seen["fetch"] = {topic: _fetch(bob, topic) for topic in ("acl-read", "acl-pre-a", "acl-hidden")}
    seen["list_offsets"] = {topic: _list_offsets(bob, topic) for topic in ("acl-read", "acl-pre-a", "acl-hidden")}
    seen["find_coordinator"] = [_settled(lambda: _coordinator(bob, "g-ok", 0)), _coordinator(bob, "g-no", 0),
                                _settled(lambda: _coordinator(bob, "tx-ok", 1)), _coordinator(bob, "tx-no", 1)]
    seen["init_producer_id"] = [_settled(lambda txn_id=txn_id: bob.call(
        ApiKey.INIT_PRODUCER_ID, 4, init_producer_id.REQUEST(transactional_id=txn_id, transaction_timeout_ms=60000)
    )).error_code for txn_id in ("tx-no", None)]
    seen["join_group_denied"] = bob.call(ApiKey.JOIN_GROUP, 5, join_group.REQUEST(
        group_id="g-no", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
        protocol_type="consumer", protocols=[join_group.Protocol(name="range", metadata=b"")])).error_code
    groups = _settled(lambda: bob.call(ApiKey.DESCRIBE_GROUPS, 5, describe_groups.REQUEST(
        groups=["g-no", "g-ok"], include_authorized_operations=True)))
    seen["describe_groups"] = [(g.group_id, g.error_code, g.authorized_operations) for g in groups.groups]
    fetched = _settled(lambda: bob.call(ApiKey.OFFSET_FETCH, 8, offset_fetch.REQUEST(groups=[
        offset_fetch.RequestGroup(group_id=g, topics=[offset_fetch.RequestGroupTopic(name=t, partition_indexes=[0])
                                                      for t in ("acl-read", "acl-hidden")])
        for g in ("g-no", "g-ok")])))
    seen["offset_fetch"] = [(g.group_id, g.error_code, sorted((t.name, t.partitions[0].error_code) for t in g.topics))
                            for g in fetched.groups]
    heartbeats = []
    for group, topic in (("g-no", "acl-read"), ("g-ok", "acl-hidden"), ("g-ok", "acl-read")):
        answer = _settled(lambda topic=topic, group=group: bob.call(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, consumer_group_heartbeat.REQUEST(
                group_id=group, member_id=f"m-{topic}", member_epoch=0, rebalance_timeout_ms=10000,
                subscribed_topic_names=[topic], topic_partitions=[])))
        heartbeats.append((answer.error_code, answer.error_message))
    seen["consumer_heartbeat"] = heartbeats
    created = bob.call(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(topics=[
        create_topics.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
        for name in ("other-new", "acl-pre-new")]))
    seen["create_topics"] = sorted((t.name, t.error_code, t.error_message) for t in created.topics)
    deleted = bob.call(ApiKey.DELETE_TOPICS, 4, delete_topics.REQUEST(topic_names=["acl-read"], timeout_ms=5000))
    seen["delete_topics"] = [(t.name, t.error_code) for t in deleted.responses]
    configs = bob.call(ApiKey.DESCRIBE_CONFIGS, 4, describe_configs.REQUEST(resources=[
        describe_configs.Resource(resource_type=2, resource_name="acl-read", configuration_keys=None),
        describe_configs.Resource(resource_type=4, resource_name="", configuration_keys=None)]))
    seen["describe_configs"] = [(r.resource_type, r.error_code, r.error_message) for r in configs.results]
    cluster = bob.call(ApiKey.DESCRIBE_CLUSTER, 1, describe_cluster.REQUEST(include_cluster_authorized_operations=True))
    seen["describe_cluster"] = (cluster.error_code, cluster.cluster_authorized_operations)
    acl_scenario_admin.run(bob, seen, _settled)
    # codes only: Kafka's CreateAcls refusal message prints its forwarded request object
    seen["acl_apis_as_bob"] = (describe(bob)[0], [code for code, _ in create(bob, ACLS[0])],
                               delete(bob, (ANY, None, ANY, None, None, ANY, ANY)))
    bob.close()

    seen["deleted"] = delete(admin, (TOPIC, "acl-pre-a", MATCH, None, None, ANY, ANY),
                             (ANY, None, ANY, "User:carol", None, ANY, ANY),
                             (TOPIC, None, ANY, None, None, 99, ANY))
    # Kafka's brokers learn of a deletion from the metadata log a moment after DeleteAcls answers
    wait_until(lambda: len(describe(admin)[1]) == len(ACLS) - 3, "the authorizer has dropped the deleted ACLs")
    seen["left"] = describe(admin)
    seen["messages"] = _messages(admin)
    admin.close()
    return seen


def _messages(admin) -> dict:
    """The error_message fields of successful ACL answers (null or empty, as each broker fills them)."""
    described = admin.call(ApiKey.DESCRIBE_ACLS, 3, describe_acls.REQUEST(
        resource_type_filter=ANY, pattern_type_filter=ANY, operation=ANY, permission_type=ANY))
    deleted = admin.call(ApiKey.DELETE_ACLS, 3, delete_acls.REQUEST(filters=[delete_acls.Filter(
        resource_type_filter=GROUP, resource_name_filter="g-ok", pattern_type_filter=ANY, operation=ANY,
        permission_type=ANY)]))
    return {"describe": described.error_message, "delete": deleted.filter_results[0].error_message,
            "deleted": [m.error_message for m in deleted.filter_results[0].matching_acls]}
