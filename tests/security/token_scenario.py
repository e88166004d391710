"""One delegation-token scenario, run on Weir and on Kafka 4.4.0 alike
(test_differential_delegation_tokens.py): an administrator (ANONYMOUS on PLAINTEXT, a super user)
creates SCRAM users alice, bob and carol, a topic and ACLs; the users create, describe, renew and
expire tokens over SASL_PLAINTEXT and authenticate with them (SCRAM with ``tokenauth=true``).
Token ids and timestamps differ between brokers, so answers are kept as error codes, owners,
labels and differences of timestamps."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from pathlib import Path
from types import SimpleNamespace

from scramp import ScramClient

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import (create_delegation_token, create_topics, describe_delegation_token,
                                    expire_delegation_token, metadata, renew_delegation_token)
from weir.protocol.primitives import ZERO_UUID

from tests.security.acl_wire import create as create_acls
from tests.security.acl_wire import describe as describe_acls
from tests.security.acl_wire import scram_login
from tests.security.sasl_setup import add_scram_user, java_client_properties
from tests.security.sasl_wire import CLOSED, SaslWire, plain_token
from tests.support.waiting import wait_until
from tests.tools.tools import run_tool

SECRET = "token-secret-key"
TOPIC = "tok-topic"
USERS = {"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}
DELEGATION_TOKEN, USER, TOPIC_RESOURCE = 6, 7, 2
LITERAL, ALLOW = 3, 3
DESCRIBE, CREATE_TOKENS = 8, 13
DAY_MS, WEEK_MS = 86_400_000, 604_800_000


def token_settings() -> dict[str, str]:
    return {"delegation.token.secret.key": SECRET}


def expected_hmac(token_id: str) -> bytes:
    return hmac.new(SECRET.encode(), token_id.encode(), hashlib.sha512).digest()


# -- the four requests and a token login, on a bare socket ----------------------------------

def create_token(wire: SaslWire, *, version: int = 3, renewers=(), owner: str | None = None, max_lifetime_ms=-1):
    kind, _, name = owner.partition(":") if owner else (None, "", None)
    return wire.call(ApiKey.CREATE_DELEGATION_TOKEN, version, create_delegation_token.REQUEST(
        owner_principal_type=kind, owner_principal_name=name,
        renewers=[create_delegation_token.Renewer(principal_type=r.partition(":")[0],
                                                  principal_name=r.partition(":")[2]) for r in renewers],
        max_lifetime_ms=max_lifetime_ms))


def renew(wire: SaslWire, token_hmac: bytes, period_ms: int, version: int = 2):
    answer = wire.call(ApiKey.RENEW_DELEGATION_TOKEN, version,
                       renew_delegation_token.REQUEST(hmac=token_hmac, renew_period_ms=period_ms))
    return answer.error_code, answer.expiry_timestamp_ms


def expire(wire: SaslWire, token_hmac: bytes, period_ms: int, version: int = 2):
    answer = wire.call(ApiKey.EXPIRE_DELEGATION_TOKEN, version,
                       expire_delegation_token.REQUEST(hmac=token_hmac, expiry_time_period_ms=period_ms))
    return answer.error_code, answer.expiry_timestamp_ms


def describe_tokens(wire: SaslWire, owners=None, version: int = 3):
    request = describe_delegation_token.REQUEST(owners=None if owners is None else [
        describe_delegation_token.Owner(principal_type=o.partition(":")[0], principal_name=o.partition(":")[2])
        for o in owners])
    return wire.call(ApiKey.DESCRIBE_DELEGATION_TOKEN, version, request)


def token_login(bootstrap: str, token_id: str, token_hmac: bytes, mechanism: str = "SCRAM-SHA-256"):
    """(SaslWire, error code of the exchange, session_lifetime_ms): SCRAM with the token id as user
    name, the HMAC in base64 as password and the tokenauth extension, as Kafka's clients send it."""
    wire = SaslWire(bootstrap)
    assert wire.handshake(mechanism).error_code == 0
    client = ScramClient([mechanism], token_id, base64.b64encode(token_hmac).decode())
    first = client.get_client_first() + ",tokenauth=true"
    client.client_first_bare += ",tokenauth=true"  # the extension is part of the signed message
    answer = wire.authenticate(first.encode())
    if answer.error_code:
        return wire, answer.error_code, None
    client.set_server_first(bytes(answer.auth_bytes).decode())
    answer = wire.authenticate(client.get_client_final().encode())
    if answer.error_code == 0:
        client.set_server_final(bytes(answer.auth_bytes).decode())
    return wire, answer.error_code, answer.session_lifetime_ms


def topic_visible(wire: SaslWire) -> int | str:
    """Metadata for TOPIC on ``wire``: 0 when its principal may describe the topic, 29 when not."""
    answer = wire.call(ApiKey.METADATA, 12, metadata.REQUEST(
        topics=[metadata.RequestTopic(name=TOPIC, topic_id=ZERO_UUID)], allow_auto_topic_creation=False))
    return answer if answer == CLOSED else answer.topics[0].error_code


# -- the scenario -------------------------------------------------------------------------

def _created(answer, labels: dict[str, str], label: str) -> tuple:
    """What a CreateDelegationToken answer shows, timestamps as differences; the token id gets ``label``."""
    if answer.error_code == 0:
        labels[answer.token_id] = label
        return (0, answer.principal_type, answer.principal_name, answer.token_requester_principal_type,
                answer.token_requester_principal_name, answer.expiry_timestamp_ms - answer.issue_timestamp_ms,
                answer.max_timestamp_ms - answer.issue_timestamp_ms, answer.hmac == expected_hmac(answer.token_id))
    return (answer.error_code, answer.principal_type, answer.principal_name, answer.token_requester_principal_type,
            answer.token_requester_principal_name, answer.issue_timestamp_ms, answer.expiry_timestamp_ms,
            answer.max_timestamp_ms, answer.token_id, bytes(answer.hmac))


def _described(answer, labels: dict[str, str]):
    if answer == CLOSED or answer.error_code:
        return answer if answer == CLOSED else (answer.error_code, [])
    return (0, sorted((labels.get(t.token_id, "?"), f"{t.principal_type}:{t.principal_name}",
                       f"{t.token_requester_principal_type}:{t.token_requester_principal_name}",
                       tuple(f"{r.principal_type}:{r.principal_name}" for r in t.renewers),
                       t.max_timestamp - t.issue_timestamp, t.hmac == expected_hmac(t.token_id))
                      for t in answer.tokens))


def _login(broker, user: str) -> SaslWire:
    return scram_login(broker.bootstrap_for("SASL_PLAINTEXT"), user, USERS[user])


def _listed(wire: SaslWire, token_id: str) -> bool:
    return token_id in [t.token_id for t in describe_tokens(wire).tokens]


def _token_works(bootstrap: str, token) -> bool:
    wire, error, _ = token_login(bootstrap, token.token_id, bytes(token.hmac))
    wire.close()
    return error == 0


def _can_login(broker, user: str) -> bool:
    try:
        _login(broker, user).close()
    except AssertionError:
        return False
    return True


def _grant(admin: SaslWire, *binding: object) -> None:
    """Create an ACL and wait until the broker's authorizer shows it (Kafka applies it from its
    metadata log a moment after the controller answered)."""
    assert [error for error, _message in create_acls(admin, binding)] == [0]
    wait_until(lambda: binding in describe_acls(admin)[1], f"the ACL {binding}")


def _setup(broker) -> SaslWire:
    plaintext = broker.bootstrap_for("PLAINTEXT")
    admin = SaslWire(plaintext)
    for user, password in USERS.items():
        add_scram_user(plaintext, user, password)
    for user in USERS:  # Kafka serves a new credential once its broker has it from the metadata log
        wait_until(lambda user=user: _can_login(broker, user), f"{user} can log in")
    admin.call(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(topics=[
        create_topics.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)]))
    _grant(admin, TOPIC_RESOURCE, TOPIC, LITERAL, "User:alice", "*", DESCRIBE, ALLOW)
    return admin


def run(broker) -> dict:
    seen: dict = {}
    labels: dict[str, str] = {}
    admin = _setup(broker)
    sasl = broker.bootstrap_for("SASL_PLAINTEXT")

    # Over PLAINTEXT (ANONYMOUS, a super user) no token request is allowed.
    seen["create_plaintext"] = _created(create_token(admin), labels, "-")
    seen["describe_plaintext"] = _described(describe_tokens(admin), labels)
    seen["renew_plaintext"] = renew(admin, b"x", 1000)
    seen["expire_plaintext"] = expire(admin, b"x", 1000)

    alice, bob, carol = _login(broker, "alice"), _login(broker, "bob"), _login(broker, "carol")
    first = create_token(alice, renewers=["User:bob"])
    seen["create"] = _created(first, labels, "alice-1")
    seen["create_v1"] = _created(create_token(alice, version=1), labels, "alice-v1")
    seen["create_group_renewer"] = _created(create_token(alice, renewers=["Group:g"]), labels, "-")
    seen["create_for_bob_denied"] = _created(create_token(alice, owner="User:bob"), labels, "-")
    _grant(admin, USER, "User:carol", LITERAL, "User:alice", "*", CREATE_TOKENS, ALLOW)
    for_carol = create_token(alice, owner="User:carol")
    seen["create_for_carol"] = _created(for_carol, labels, "carol-by-alice")

    # Authenticating with a token: the session's principal is the owner, and it may not ask for tokens.
    for token in (first, for_carol):  # Kafka's broker serves a token once it has it from the metadata log
        wait_until(lambda token=token: _token_works(sasl, token), "the broker serves the new token")
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        wire, error, lifetime = token_login(sasl, first.token_id, bytes(first.hmac), mechanism)
        seen[f"token_login_{mechanism}"] = (error, 0 < lifetime <= DAY_MS, topic_visible(wire))
        if mechanism == "SCRAM-SHA-256":
            seen["token_session_create"] = _created(create_token(wire), labels, "-")[:5]
            seen["token_session_describe"] = _described(describe_tokens(wire), labels)
            seen["token_session_renew"] = renew(wire, bytes(first.hmac), 1000)
            seen["token_session_expire"] = expire(wire, bytes(first.hmac), 1000)
        wire.close()
    wire, error, _ = token_login(sasl, for_carol.token_id, bytes(for_carol.hmac))
    seen["carol_token_login"] = (error, topic_visible(wire))  # carol may not describe the topic
    wire.close()
    seen["wrong_hmac_login"] = token_login(sasl, first.token_id, bytes(for_carol.hmac))[1]
    seen["unknown_token_login"] = token_login(sasl, "no-such-token", bytes(first.hmac))[1]
    seen["token_login_without_tokenauth"] = scram_login_error(sasl, first.token_id, bytes(first.hmac))

    # Who sees which tokens (KIP-373): owners and renewers theirs, others by ACL.
    seen["describe_alice"] = _described(describe_tokens(alice), labels)
    seen["describe_alice_v1"] = _described(describe_tokens(alice, version=1), labels)
    seen["describe_bob"] = _described(describe_tokens(bob), labels)
    seen["describe_carol"] = _described(describe_tokens(carol), labels)
    seen["describe_empty_owners"] = _described(describe_tokens(alice, owners=[]), labels)
    super_user = SaslWire(sasl)
    super_user.handshake("PLAIN")
    assert super_user.authenticate(plain_token("admin", "admin-secret")).error_code == 0
    seen["describe_super_user"] = _described(describe_tokens(super_user), labels)
    seen["describe_owner_bob"] = _described(describe_tokens(super_user, owners=["User:bob"]), labels)
    _grant(admin, DELEGATION_TOKEN, first.token_id, LITERAL, "User:carol", "*", DESCRIBE, ALLOW)
    seen["describe_carol_granted_token"] = _described(describe_tokens(carol), labels)
    _grant(admin, USER, "User:carol", LITERAL, "User:bob", "*", 14, ALLOW)  # DESCRIBE_TOKENS
    seen["describe_bob_granted_owner"] = _described(describe_tokens(bob), labels)

    # Renew and expire: owner or renewer only.
    seen["renew_unknown"] = renew(alice, b"not-a-token-hmac", 1000)
    seen["renew_by_carol"] = renew(carol, bytes(first.hmac), 1000)
    seen["expire_by_carol"] = expire(carol, bytes(first.hmac), 1000)
    sent = int(time.time() * 1000)  # the broker's clock reads at least this when it renews
    error, expiry = renew(bob, bytes(first.hmac), 60_000)
    seen["renew_by_renewer"] = (error, 0 <= expiry - sent - 60_000 < 60_000)
    error, expiry = renew(alice, bytes(first.hmac), 10 * DAY_MS, version=1)
    seen["renew_capped"] = (error, 0 <= expiry - sent - DAY_MS < 60_000)

    # A token past its max lifetime: refused until the sweep removes it; expire(-1) removes it now.
    short = create_token(alice, max_lifetime_ms=1000)
    seen["create_short"] = _created(short, labels, "short")
    wait_until(lambda: _listed(alice, short.token_id), "the broker serves the new token")
    wait_until(lambda: time.time() * 1000 > short.max_timestamp_ms + 50, "the short token's max lifetime",
               interval=0.05)
    seen["renew_expired"] = renew(alice, bytes(short.hmac), 1000)
    seen["expire_expired"] = expire(alice, bytes(short.hmac), 1000)
    seen["describe_expired_listed"] = _described(describe_tokens(alice), labels)
    wire, error, lifetime = token_login(sasl, short.token_id, bytes(short.hmac))
    seen["login_expired_token"] = (error, lifetime, topic_visible(wire))  # a session over at once
    wire.close()
    seen["expire_now"] = expire(alice, bytes(short.hmac), -1)[0]
    # Kafka's broker drops the token from its cache once the removal reaches it from the metadata log
    wait_until(lambda: not _listed(alice, short.token_id), "the broker to drop the expired token")
    seen["describe_after_expire_now"] = _described(describe_tokens(alice), labels)
    seen["renew_removed"] = renew(alice, bytes(short.hmac), 1000)
    seen["login_removed_token"] = token_login(sasl, short.token_id, bytes(short.hmac))[1]
    for wire in (admin, alice, bob, carol, super_user):
        wire.close()
    seen["_first"] = (first.token_id, bytes(first.hmac))  # for the Java tools (not compared)
    return seen


def scram_login_error(bootstrap: str, user: str, token_hmac: bytes) -> int:
    """The error of a plain SCRAM login (no tokenauth) with a token's id and HMAC: a token is no user."""
    try:
        scram_login(bootstrap, user, base64.b64encode(token_hmac).decode()).close()
    except AssertionError:
        return 58
    return 0


# -- Kafka's own tools: kafka-delegation-tokens and a Java client logging in with the token ---------

TOKEN_COMMAND = "org.apache.kafka.tools.DelegationTokenCommand"
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"


def _exception(result) -> str | None:
    """The first Kafka exception class a failed tool names, as ``(rc, name)``."""
    match = re.search(r"\b(\w+(?:Exception|Error))\b", result.stdout + result.stderr)
    return match.group(1) if match else None


def _rows(stdout: str) -> list[list[str]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TOKENID"))
    return [line.split() for line in lines[start + 1:] if line.strip()]


def java_tools(broker, run_dir: Path) -> dict:
    """kafka-delegation-tokens creating, describing, renewing and expiring a token, and
    kafka-topics (the Java Admin) authenticated by it (SCRAM with tokenauth="true")."""
    seen: dict = {}
    sasl = broker.bootstrap_for("SASL_PLAINTEXT")
    configs = {}
    for user in ("alice", "bob"):
        configs[user] = run_dir / f"{user}.properties"
        configs[user].write_text(java_client_properties("SASL_PLAINTEXT", "SCRAM-SHA-512", user, USERS[user]))

    def tool(main_class: str, config: Path, *args: str):
        return run_tool(main_class, "--bootstrap-server", sasl, "--command-config", str(config), *args)

    created = tool(TOKEN_COMMAND, configs["alice"], "--create", "--max-life-time-period", "-1",
                   "--renewer-principal", "User:bob")
    token_id, token_hmac, owner, requester, renewers = _rows(created.stdout)[0][:5]
    seen["create"] = (created.returncode, owner, requester, renewers,
                      base64.b64decode(token_hmac) == expected_hmac(token_id))
    token = SimpleNamespace(token_id=token_id, hmac=base64.b64decode(token_hmac))
    wait_until(lambda: _token_works(sasl, token), "the broker serves the new token")
    described = tool(TOKEN_COMMAND, configs["alice"], "--describe", "--owner-principal", "User:alice")
    seen["describe_owner"] = (described.returncode, token_id in [row[0] for row in _rows(described.stdout)])
    seen["describe_current_user"] = tool(TOKEN_COMMAND, configs["alice"], "--describe").stdout.count(token_id)

    token_config = run_dir / "token.properties"
    token_config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config="
        f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{token_id}" '
        f'password="{token_hmac}" tokenauth="true";\n')
    listed = tool(TOPIC_COMMAND, token_config, "--list")
    seen["topics_with_token"] = (listed.returncode, listed.stdout.split())  # alice may describe TOPIC only
    refused = tool(TOKEN_COMMAND, token_config, "--describe")
    seen["describe_with_token"] = (refused.returncode, _exception(refused))
    renewed = tool(TOKEN_COMMAND, configs["bob"], "--renew", "--hmac", token_hmac, "--renew-time-period", "60000")
    seen["renew_by_bob"] = (renewed.returncode, "Completed renew operation" in renewed.stdout)
    expired = tool(TOKEN_COMMAND, configs["alice"], "--expire", "--hmac", token_hmac, "--expiry-time-period", "-1")
    seen["expire_now"] = (expired.returncode, "Completed expire operation" in expired.stdout)
    wait_until(lambda: not _token_works(sasl, token), "the expired token no longer logs in")
    refused = tool(TOPIC_COMMAND, token_config, "--list")
    seen["topics_after_expiry"] = (refused.returncode != 0, _exception(refused))
    return seen


def run_disabled(broker) -> dict:
    """The four requests on a broker without delegation.token.secret.key, from a SCRAM user."""
    plaintext = broker.bootstrap_for("PLAINTEXT")
    add_scram_user(plaintext, "alice", USERS["alice"])
    wait_until(lambda: _can_login(broker, "alice"), "alice can log in")
    alice = _login(broker, "alice")
    seen = {"create": _created(create_token(alice), {}, "-"),
            "create_v1": _created(create_token(alice, version=1), {}, "-"),
            "describe": _described(describe_tokens(alice), {}), "renew": renew(alice, b"x", 1000),
            "expire": expire(alice, b"x", 1000),
            "token_login": token_login(broker.bootstrap_for("SASL_PLAINTEXT"), "some-id", b"x")[1]}
    alice.close()
    return seen
