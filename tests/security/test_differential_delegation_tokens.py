"""Delegation tokens on Weir and on Apache Kafka 4.4.0, configured alike (PLAINTEXT for the
administrators, SASL_PLAINTEXT with PLAIN and both SCRAM mechanisms, StandardAuthorizer,
delegation.token.secret.key): the four token APIs' answers, logins with tokens
(tests/security/token_scenario.py), Kafka's own tools creating a token and a Java client
authenticating with it, and both brokers without the secret key (tokens disabled)."""

from __future__ import annotations

import pytest

from reference.kafka import KafkaProcess
from tests.security import token_scenario
from tests.security.acl_wire import acl_settings
from tests.security.brokers import ConfiguredBroker, listeners_setting
from tests.security.sasl_setup import sasl_settings


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[str, dict]:
    seen = {}
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    overrides = {**acl_settings(), **token_scenario.token_settings()}
    run_dir = tmp_path_factory.mktemp("weir-tokens")
    weir = ConfiguredBroker(run_dir, {**settings, **overrides}, ports).start()
    try:
        seen["weir"] = token_scenario.run(weir)
        seen["weir"]["java_tools"] = token_scenario.java_tools(weir, run_dir)
    finally:
        weir.stop()
    run_dir = tmp_path_factory.mktemp("kafka-tokens")
    kafka = KafkaProcess(run_dir, extra_listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"}, overrides=overrides).start()
    try:
        seen["kafka"] = token_scenario.run(kafka)
        seen["kafka"]["java_tools"] = token_scenario.java_tools(kafka, run_dir)
    finally:
        kafka.stop()
    return seen


@pytest.fixture(scope="module")
def disabled_answers(tmp_path_factory) -> dict[str, dict]:
    """The same brokers without delegation.token.secret.key: tokens disabled."""
    seen = {}
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    sasl = sasl_settings(["SASL_PLAINTEXT"])
    weir = ConfiguredBroker(tmp_path_factory.mktemp("weir-no-tokens"), {**settings, **sasl}, ports).start()
    try:
        seen["weir"] = token_scenario.run_disabled(weir)
    finally:
        weir.stop()
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka-no-tokens"),
                         extra_listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"}, overrides=sasl).start()
    try:
        seen["kafka"] = token_scenario.run_disabled(kafka)
    finally:
        kafka.stop()
    return seen


def test_disabled_tokens_answer_as_kafka(disabled_answers):
    assert disabled_answers["weir"] == disabled_answers["kafka"]
    seen = disabled_answers["weir"]
    assert seen["create"][:2] == (61, "User") and seen["describe"] == (61, [])  # DELEGATION_TOKEN_AUTH_DISABLED
    assert seen["renew"][0] == seen["expire"][0] == 61 and seen["token_login"] == 58


def test_token_answers_match_kafka(answers):
    weir, kafka = answers["weir"], answers["kafka"]
    differing = {key: (weir.get(key), kafka[key]) for key in kafka
                 if not key.startswith("_") and weir.get(key) != kafka[key]}
    assert not differing, differing



def test_token_answers_are_kafkas_rules(answers):
    """What the scenario must show, so that agreeing on nothing would not pass."""
    seen = answers["weir"]
    assert seen["create_plaintext"][0] == seen["describe_plaintext"][0] == 64  # DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    assert seen["renew_plaintext"] == seen["expire_plaintext"] == (64, -1)
    day, week = token_scenario.DAY_MS, token_scenario.WEEK_MS
    assert seen["create"] == (0, "User", "alice", "User", "alice", day, week, True)
    assert seen["create_group_renewer"][0] == 67 and seen["create_for_bob_denied"][0] == 65
    assert seen["create_for_carol"][:5] == (0, "User", "carol", "User", "alice")
    assert seen["token_login_SCRAM-SHA-256"] == seen["token_login_SCRAM-SHA-512"] == (0, True, 0)
    assert seen["carol_token_login"] == (0, 29)  # the session is carol's, who may not describe the topic
    assert seen["token_session_create"][0] == 64 and seen["token_session_renew"] == (64, -1)
    assert seen["wrong_hmac_login"] == seen["unknown_token_login"] == seen["token_login_without_tokenauth"] == 58
    assert [t[0] for t in seen["describe_alice"][1]] == ["alice-1", "alice-v1", "carol-by-alice"]
    assert [t[0] for t in seen["describe_bob"][1]] == ["alice-1"]
    assert [t[0] for t in seen["describe_carol"][1]] == ["carol-by-alice"]
    assert [t[0] for t in seen["describe_carol_granted_token"][1]] == ["alice-1", "carol-by-alice"]
    assert [t[0] for t in seen["describe_bob_granted_owner"][1]] == ["alice-1", "carol-by-alice"]
    assert len(seen["describe_super_user"][1]) == 3 and seen["describe_empty_owners"] == (0, [])
    assert seen["renew_unknown"] == (62, 0) and seen["renew_by_carol"] == seen["expire_by_carol"] == (63, 0)
    assert seen["renew_by_renewer"] == seen["renew_capped"] == (0, True)
    assert seen["renew_expired"] == seen["expire_expired"] == (66, 0)
    assert seen["login_expired_token"] == (0, 0, "closed") and seen["expire_now"] == 0
    assert seen["renew_removed"] == (62, 0) and seen["login_removed_token"] == 58
    assert seen["java_tools"] == {
        "create": (0, "User:alice", "User:alice", "[User:bob]", True), "describe_owner": (0, True),
        "describe_current_user": 0,  # the tool sends an empty owner list "for the current user": no token, on Kafka too
        "topics_with_token": (0, ["tok-topic"]), "describe_with_token": (1, "UnsupportedByAuthenticationException"),
        "renew_by_bob": (0, True), "expire_now": (0, True),
        "topics_after_expiry": (True, "SaslAuthenticationException")}
