"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) match Kafka 4.3's JSON schemas field by field.

kafka-python ships no JSON for them, so Kafka's fields are written out here (name, type, nullable
versions, tag), in the flattened form test_schemas_match_kafka compares.
"""

import pytest

from weir.protocol.messages import consumer_group_describe, consumer_group_heartbeat

from .test_schemas_match_kafka import ours_flat

TOPIC_PARTITIONS = [("topicid", "uuid", False, None), ("partitions", "[]int32", False, None)]

HEARTBEAT_REQUEST = [
    ("groupid", "string", False, None), ("memberid", "string", False, None),
    ("memberepoch", "int32", False, None), ("instanceid", "string", True, None),
    ("rackid", "string", True, None), ("rebalancetimeoutms", "int32", False, None),
    ("subscribedtopicnames", "[]string", True, None),
    ("subscribedtopicregex", "string", True, None),  # v1+
    ("serverassignor", "string", True, None),
    ("topicpartitions", "[]struct", True, None),
    *[("topicpartitions." + name, *rest) for name, *rest in TOPIC_PARTITIONS],
]

HEARTBEAT_RESPONSE = [
    ("throttletimems", "int32", False, None), ("errorcode", "int16", False, None),
    ("errormessage", "string", True, None), ("memberid", "string", True, None),
    ("memberepoch", "int32", False, None), ("heartbeatintervalms", "int32", False, None),
    ("assignment", "struct", True, None), ("assignment.topicpartitions", "[]struct", False, None),
    *[("assignment.topicpartitions." + name, *rest) for name, *rest in TOPIC_PARTITIONS],
]

DESCRIBE_REQUEST = [("groupids", "[]string", False, None), ("includeauthorizedoperations", "bool", False, None)]


def _assignment(prefix):
    return [(prefix, "struct", False, None), (prefix + ".topicpartitions", "[]struct", False, None),
            (prefix + ".topicpartitions.topicid", "uuid", False, None),
            (prefix + ".topicpartitions.topicname", "string", False, None),
            (prefix + ".topicpartitions.partitions", "[]int32", False, None)]


def _describe_response(version):
    member = "groups.members."
    return [
        ("throttletimems", "int32", False, None), ("groups", "[]struct", False, None),
        ("groups.errorcode", "int16", False, None), ("groups.errormessage", "string", True, None),
        ("groups.groupid", "string", False, None), ("groups.groupstate", "string", False, None),
        ("groups.groupepoch", "int32", False, None), ("groups.assignmentepoch", "int32", False, None),
        ("groups.assignorname", "string", False, None), ("groups.members", "[]struct", False, None),
        (member + "memberid", "string", False, None), (member + "instanceid", "string", True, None),
        (member + "rackid", "string", True, None), (member + "memberepoch", "int32", False, None),
        (member + "clientid", "string", False, None), (member + "clienthost", "string", False, None),
        (member + "subscribedtopicnames", "[]string", False, None),
        (member + "subscribedtopicregex", "string", True, None),
        *_assignment(member + "assignment"), *_assignment(member + "targetassignment"),
        *([(member + "membertype", "int8", False, None)] if version >= 1 else []),
        ("groups.authorizedoperations", "int32", False, None),
    ]


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_matches_kafka(version):
    request = [f for f in HEARTBEAT_REQUEST if version >= 1 or f[0] != "subscribedtopicregex"]
    assert ours_flat(consumer_group_heartbeat.REQUEST, version) == request
    assert ours_flat(consumer_group_heartbeat.RESPONSE, version) == HEARTBEAT_RESPONSE
    for message in (consumer_group_heartbeat.REQUEST, consumer_group_heartbeat.RESPONSE):
        assert message.api_key == 68 and message.versions == (0, 1) and message.is_flexible(0)


@pytest.mark.parametrize("version", [0, 1])
def test_describe_matches_kafka(version):
    assert ours_flat(consumer_group_describe.REQUEST, version) == DESCRIBE_REQUEST
    assert ours_flat(consumer_group_describe.RESPONSE, version) == _describe_response(version)


def test_heartbeat_request_defaults_mean_unchanged():
    # (a nullable array's Python default is [], so null is given explicitly, as a client sends it)
    request = consumer_group_heartbeat.REQUEST(group_id="g", member_id="m", member_epoch=3,
                                               subscribed_topic_names=None, topic_partitions=None)
    decoded = consumer_group_heartbeat.REQUEST.decode(1, consumer_group_heartbeat.REQUEST.encode(1, request))
    assert (decoded.rebalance_timeout_ms, decoded.subscribed_topic_names, decoded.subscribed_topic_regex,
            decoded.topic_partitions, decoded.server_assignor) == (-1, None, None, None, None)


def test_heartbeat_response_null_assignment_is_one_byte_marker():
    response = consumer_group_heartbeat.RESPONSE(error_code=0, member_id="m", member_epoch=1,
                                                 heartbeat_interval_ms=5000)
    encoded = consumer_group_heartbeat.RESPONSE.encode(0, response)
    # throttle(4) error(2) null message(1) "m"(2) epoch(4) interval(4) null assignment(1) tags(1)
    assert len(encoded) == 19 and encoded[-2:] == b"\xff\x00"
