"""The authorizer's rules without a broker: StandardAuthorizer's decision (super users, deny
beats allow, implied DESCRIBE / DESCRIBE_CONFIGS, LITERAL / PREFIXED / ``*``, host, User:*,
allow.everyone.if.no.acl.found), authorizeByResourceType, filter matching, the durable store."""

from __future__ import annotations

import logging

import pytest

from weir.broker.acl import model as m
from weir.broker.acl.authorizer import Authorizer
from weir.broker.acl.model import AclBinding, AclFilter
from weir.broker.acl.store import AclStore
from weir.broker.config import BrokerConfig, ConfigError
from weir.broker.security.session import Session

ON = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def session(principal="User:alice", host="/127.0.0.1"):
    return Session(listener=None, client_host=host, principal=principal, authenticated=True)


def authorizer(tmp_path, *acls, **settings) -> Authorizer:
    store = AclStore(tmp_path)
    store.create([AclBinding(*acl) for acl in acls])
    return Authorizer(BrokerConfig({**ON, **settings}), store)


def allow(rtype, name, op, principal="User:alice", pattern=m.LITERAL, host="*"):
    return (rtype, name, pattern, principal, host, op, m.ALLOW)


def deny(rtype, name, op, principal="User:alice", pattern=m.LITERAL, host="*"):
    return (rtype, name, pattern, principal, host, op, m.DENY)


def test_off_allows_everything_and_reports_every_operation(tmp_path):
    off = Authorizer(BrokerConfig({}), AclStore(tmp_path))
    assert not off.enabled and off.allows(session(), m.WRITE, m.TOPIC, "t")
    assert off.denied(session(), m.WRITE, m.TOPIC, ["t"]) == set()
    assert off.authorized_operations(session(), m.TOPIC, "t") == sum(1 << op for op in m.SUPPORTED_OPERATIONS[m.TOPIC])


def test_no_acl_denies_unless_allow_everyone_and_super_users_pass(tmp_path):
    assert not authorizer(tmp_path).allows(session(), m.READ, m.TOPIC, "t")
    assert authorizer(tmp_path, **{"allow.everyone.if.no.acl.found": "true"}).allows(session(), m.READ, m.TOPIC, "t")
    # an ACL on the resource for someone else: allow.everyone no longer applies
    other = authorizer(tmp_path, allow(m.TOPIC, "t", m.READ, "User:bob"), **{"allow.everyone.if.no.acl.found": "true"})
    assert not other.allows(session(), m.READ, m.TOPIC, "t")
    supers = authorizer(tmp_path, deny(m.TOPIC, "t", m.ALL), **{"super.users": "User:root;User:alice"})
    assert supers.allows(session(), m.DELETE, m.TOPIC, "t")


def test_deny_beats_allow_and_implications_apply_to_allow_only(tmp_path):
    a = authorizer(tmp_path, allow(m.TOPIC, "t", m.ALL), deny(m.TOPIC, "t", m.WRITE),
                   allow(m.TOPIC, "u", m.WRITE), deny(m.TOPIC, "u", m.READ),
                   allow(m.TOPIC, "v", m.ALTER_CONFIGS))
    s = session()
    assert a.allows(s, m.READ, m.TOPIC, "t") and not a.allows(s, m.WRITE, m.TOPIC, "t")
    assert a.allows(s, m.DESCRIBE, m.TOPIC, "u")  # WRITE implies DESCRIBE; a READ deny does not deny it
    assert not a.allows(s, m.READ, m.TOPIC, "u")
    assert a.allows(s, m.DESCRIBE_CONFIGS, m.TOPIC, "v") and not a.allows(s, m.DESCRIBE, m.TOPIC, "v")
    assert a.authorized_operations(s, m.TOPIC, "u") == (1 << m.WRITE) | (1 << m.DESCRIBE)


def test_patterns_wildcards_hosts_and_principals(tmp_path):
    a = authorizer(tmp_path, allow(m.TOPIC, "pay-", m.READ, pattern=m.PREFIXED),
                   deny(m.TOPIC, "pay-secret", m.READ, pattern=m.PREFIXED),
                   allow(m.TOPIC, "*", m.DESCRIBE, "User:*"),
                   allow(m.GROUP, "g", m.READ, host="10.0.0.1"),
                   allow(m.TOPIC, "pay", m.WRITE))
    s = session()
    assert a.allows(s, m.READ, m.TOPIC, "pay-orders") and not a.allows(s, m.READ, m.TOPIC, "pay-secret-1")
    assert not a.allows(s, m.READ, m.TOPIC, "pa")
    assert a.allows(session("User:anyone"), m.DESCRIBE, m.TOPIC, "whatever")
    assert not a.allows(s, m.WRITE, m.TOPIC, "payx")  # a LITERAL name is no prefix
    assert not a.allows(s, m.READ, m.GROUP, "g") and a.allows(session(host="/10.0.0.1"), m.READ, m.GROUP, "g")


def test_allows_any_follows_authorize_by_resource_type(tmp_path):
    s = session()
    assert authorizer(tmp_path, allow(m.TOPIC, "t", m.WRITE)).allows_any(s, m.WRITE, m.TOPIC)
    assert not authorizer(tmp_path, allow(m.TOPIC, "t", m.READ)).allows_any(s, m.WRITE, m.TOPIC)
    assert not authorizer(tmp_path, allow(m.TOPIC, "t", m.WRITE), deny(m.TOPIC, "t", m.WRITE)).allows_any(
        s, m.WRITE, m.TOPIC)
    assert not authorizer(tmp_path, allow(m.TOPIC, "ab", m.WRITE, pattern=m.PREFIXED),
                          deny(m.TOPIC, "a", m.ALL, pattern=m.PREFIXED)).allows_any(s, m.WRITE, m.TOPIC)
    assert not authorizer(tmp_path, allow(m.TOPIC, "t", m.WRITE), deny(m.TOPIC, "*", m.WRITE, "User:*")).allows_any(
        s, m.WRITE, m.TOPIC)


def test_denials_are_logged_at_info_in_kafkas_words(tmp_path, caplog):
    a = authorizer(tmp_path)
    s = session()
    s.api_key = 0
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        a.allows(s, m.WRITE, m.TOPIC, "t")
        a.allows(s, m.READ, m.TOPIC, "quiet", audit_denial=False)
    assert [r.getMessage() for r in caplog.records] == [
        "Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on resource = Topic:LITERAL:t "
        "for request = PRODUCE with resourceRefCount = 1 based on rule DefaultDeny"]


def test_filters_match_as_kafka_filters_do():
    literal = AclBinding(m.TOPIC, "orders", m.LITERAL, "User:a", "*", m.READ, m.ALLOW)
    prefixed = AclBinding(m.TOPIC, "ord", m.PREFIXED, "User:a", "*", m.READ, m.ALLOW)
    wildcard = AclBinding(m.TOPIC, "*", m.LITERAL, "User:a", "*", m.READ, m.ALLOW)
    match = AclFilter(m.TOPIC, "orders", m.MATCH, None, None, m.ANY, m.ANY)
    assert [match.matches(acl) for acl in (literal, prefixed, wildcard)] == [True, True, True]
    exact = AclFilter(m.ANY, "ord", m.ANY, None, None, m.ANY, m.ANY)
    assert [exact.matches(acl) for acl in (literal, prefixed, wildcard)] == [False, True, False]
    narrow = AclFilter(m.ANY, None, m.LITERAL, "User:a", "*", m.READ, m.DENY)
    assert not narrow.matches(literal)
    assert AclFilter(m.TOPIC, None, m.ANY, None, None, m.UNKNOWN, m.ANY).is_unknown()


def test_store_keeps_acls_across_a_reload_and_ignores_duplicates(tmp_path):
    store = AclStore(tmp_path)
    acl = AclBinding(m.GROUP, "g", m.LITERAL, "User:a", "*", m.READ, m.ALLOW)
    store.create([acl, acl])
    store.create([acl])
    reloaded = AclStore(tmp_path)
    reloaded.load()
    assert reloaded.describe(AclFilter(m.ANY, None, m.ANY, None, None, m.ANY, m.ANY)) == [acl]
    assert reloaded.delete([AclFilter(m.GROUP, "g", m.LITERAL, None, None, m.ANY, m.ANY)]) == [[acl]]
    again = AclStore(tmp_path)
    again.load()
    assert len(again) == 0


def test_settings_accept_kafkas_authorizer_only():
    assert BrokerConfig({**ON, "super.users": "User:a; User:CN=b,O=c"})["super.users"] == ("User:a", "User:CN=b,O=c")
    with pytest.raises(ConfigError, match="removed in Kafka 4"):
        BrokerConfig({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(ConfigError):
        BrokerConfig({"authorizer.class.name": "com.example.Mine"})


def test_a_failed_write_changes_nothing_and_is_each_creations_answer(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from weir.broker.acl import store as store_module
    from weir.broker.handlers import create_acls as handler
    from weir.protocol.errors import Errors, KafkaError
    from weir.protocol.messages import create_acls as msg

    a = authorizer(tmp_path, allow(m.TOPIC, "kept", m.READ), **{"super.users": "User:alice"})

    def full_disk(path, data):
        raise KafkaError(Errors.KAFKA_STORAGE_ERROR, "No space left on device")
    monkeypatch.setattr(store_module, "replace_durably", full_disk)
    request = msg.REQUEST(creations=[
        msg.Creation(resource_type=m.TOPIC, resource_name="new", resource_pattern_type=m.LITERAL,
                     principal="User:bob", host="*", operation=m.READ, permission_type=m.ALLOW),
        msg.Creation(resource_type=m.TOPIC, resource_name="", resource_pattern_type=m.LITERAL,
                     principal="User:bob", host="*", operation=m.READ, permission_type=m.ALLOW)])
    answer = handler.handle(SimpleNamespace(authorizer=a), None, request, session=session())
    assert [(r.error_code, r.error_message) for r in answer.results] == [
        (Errors.KAFKA_STORAGE_ERROR, "No space left on device"),
        (Errors.INVALID_REQUEST, "Invalid empty resource name")]
    assert [acl.resource_name for acl in a.store.describe(AclFilter(m.ANY, None, m.ANY, None, None, m.ANY, m.ANY))] \
        == ["kept"]


def test_produce_needs_write_and_create_for_a_topic_it_would_create(tmp_path):
    from types import SimpleNamespace

    from weir.broker.acl.checks import produce_refusals
    from weir.protocol.errors import Errors
    from weir.protocol.messages import produce as msg

    a = authorizer(tmp_path, allow(m.TOPIC, "t", m.WRITE, pattern=m.PREFIXED), allow(m.TOPIC, "t-ok", m.CREATE))
    context = SimpleNamespace(authorizer=a, logs=SimpleNamespace(topics={"t-old": object()}))
    request = msg.REQUEST(acks=-1, timeout_ms=1000, topic_data=[
        msg.TopicData(name=name, partition_data=[msg.PartitionData(index=0, records=b"")])
        for name in ("t-old", "t-ok", "t-new", "x")])
    assert produce_refusals(context, session(), request) == {
        "t-new": Errors.UNKNOWN_TOPIC_OR_PARTITION, "x": Errors.TOPIC_AUTHORIZATION_FAILED}
