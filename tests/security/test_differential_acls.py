"""Kafka's StandardAuthorizer on Weir and on Apache Kafka 4.4.0, configured alike (PLAINTEXT
for super users, SASL_PLAINTEXT with a SCRAM user, the same ACLs): the ACL APIs' answers and
what each API answers a principal the ACLs restrict (tests/security/acl_scenario.py)."""

from __future__ import annotations

import pytest

from reference.kafka import KafkaProcess
from tests.security import acl_scenario
from tests.security.acl_wire import acl_settings
from tests.security.brokers import ConfiguredBroker, listeners_setting


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[str, dict]:
    seen = {}
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    weir = ConfiguredBroker(tmp_path_factory.mktemp("weir-acl"), {**settings, **acl_settings()}, ports).start()
    try:
        seen["weir"] = acl_scenario.run(weir)
    finally:
        weir.stop()
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka-acl"), extra_listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
                         overrides=acl_settings()).start()
    try:
        seen["kafka"] = acl_scenario.run(kafka)
    finally:
        kafka.stop()
    return seen


def test_acl_answers_match_kafka(answers):
    weir, kafka = answers["weir"], answers["kafka"]
    differing = {key: (weir[key], kafka[key]) for key in kafka if weir.get(key) != kafka[key]}
    assert not differing, differing


def test_acl_answers_are_the_authorizers(answers):
    """What the scenario must show, so that agreeing on nothing would not pass."""
    seen = answers["weir"]
    assert seen["produce"] == {"acl-read": 29, "acl-pre-a": 0, "acl-hidden": 29}
    assert seen["fetch"] == {"acl-read": 0, "acl-pre-a": 29, "acl-hidden": 29}
    assert seen["metadata_all"] == ["acl-pre-a", "acl-read"]  # DESCRIBE implied by WRITE and READ; acl-hidden denied
    assert seen["find_coordinator"] == [0, 30, 0, 53]
    assert seen["init_producer_id"] == [53, 0]
    assert seen["join_group_denied"] == 30
    assert seen["transactional_produce_denied"] == 53 and seen["consumer_heartbeat"][1] == (29, None)
    assert seen["acl_apis_as_bob"][0] == 31
    assert seen["describe_log_dirs"] == (31, []) and seen["elect_leaders"] == (31, [[31]])
    assert seen["alter_partition_reassignments"] == (31, [[31]])
    assert seen["list_partition_reassignments"] == (31, [("acl-read", [0])])
    assert [answer[0][0] for answer in seen["invalid_creations"]] == [42, 42, -1, -1, -1, -1, -1, 42]
    assert seen["left"] == (0, sorted(acl_scenario.ACLS[:1] + acl_scenario.ACLS[3:5] + acl_scenario.ACLS[6:]))
