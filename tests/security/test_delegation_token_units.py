"""Delegation tokens without sockets: the store's rules on a manual clock (lifetimes, renewal caps,
the sweep, persistence, the secret key), the handlers' refusals, and a SCRAM exchange with
``tokenauth=true`` authenticating the token's owner."""

from __future__ import annotations

import base64
from types import SimpleNamespace

import pytest
from scramp import ScramClient

from weir.broker.acl.authorizer import Authorizer
from weir.broker.acl.store import AclStore
from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.handlers import create_delegation_token, describe_delegation_token, renew_delegation_token
from weir.broker.security.delegation_tokens import DelegationTokens
from weir.broker.security.listeners import ListenerSpec
from weir.broker.security.scram import ScramError, ScramServer
from weir.broker.security.session import Session
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import create_delegation_token as create_msg
from weir.protocol.messages import describe_delegation_token as describe_msg
from weir.protocol.messages import renew_delegation_token as renew_msg

DAY, WEEK = 86_400_000, 604_800_000
SETTINGS = {"delegation.token.secret.key": "k1", "delegation.token.expiry.check.interval.ms": "1000"}


def _tokens(tmp_path, clock, **settings) -> DelegationTokens:
    tokens = DelegationTokens(tmp_path, BrokerConfig({**SETTINGS, **settings}), clock)
    tokens.load()
    return tokens


def _session(protocol="SASL_PLAINTEXT", principal="User:alice", token_authenticated=False) -> Session:
    spec = ListenerSpec("L", protocol, "127.0.0.1", 9092, "127.0.0.1", 9092)
    return Session(spec, "/127.0.0.1", principal=principal, authenticated=True,
                   token_authenticated=token_authenticated)


def _context(tmp_path, tokens) -> SimpleNamespace:
    return SimpleNamespace(delegation_tokens=tokens, authorizer=Authorizer(BrokerConfig({}), AclStore(tmp_path)))


def _header(version: int) -> SimpleNamespace:
    return SimpleNamespace(api_version=version)


def test_lifetimes_renewal_and_expiry(tmp_path):
    clock = ManualClock()
    tokens = _tokens(tmp_path, clock)
    token = tokens.create("User:alice", "User:alice", ["User:bob"], -1)
    assert (token.expiry_ms - token.issue_ms, token.max_ms - token.issue_ms) == (DAY, WEEK)
    assert tokens.create("User:alice", "User:alice", [], 5000).expiry_ms == clock.now_ms() + 5000  # max caps expiry
    token_hmac = tokens.hmac(token.token_id)
    with pytest.raises(KafkaError) as refused:
        tokens.renew("User:carol", token_hmac, 1000)
    assert refused.value.error == Errors.DELEGATION_TOKEN_OWNER_MISMATCH
    assert tokens.renew("User:bob", token_hmac, 10 * DAY) == clock.now_ms() + DAY  # at most expiry.time.ms
    assert tokens.expire("User:alice", token_hmac, 10) == clock.now_ms() + 10
    clock.advance(11)
    for call in (tokens.renew, tokens.expire):
        with pytest.raises(KafkaError) as refused:
            call("User:alice", token_hmac, 1000)
        assert refused.value.error == Errors.DELEGATION_TOKEN_EXPIRED
    assert token.token_id in [t.token_id for t in tokens.tokens()]  # listed until the sweep
    clock.advance(1000)  # the sweep interval has passed: the next look removes it
    assert token.token_id not in [t.token_id for t in tokens.tokens()]
    with pytest.raises(KafkaError) as refused:
        tokens.renew("User:alice", token_hmac, 1000)
    assert refused.value.error == Errors.DELEGATION_TOKEN_NOT_FOUND


def test_tokens_survive_a_restart_and_the_secret_key_makes_the_hmac(tmp_path):
    clock = ManualClock()
    first = _tokens(tmp_path, clock)
    token = first.create("User:alice", "User:admin", ["User:bob"], -1)
    gone = first.create("User:alice", "User:alice", [], -1)
    first.expire("User:alice", first.hmac(gone.token_id), -1)
    again = _tokens(tmp_path, clock)
    assert [t for t in again.tokens()] == [token]
    assert again.hmac(token.token_id) == first.hmac(token.token_id)
    assert again.credential(token.token_id, "SCRAM-SHA-512") is not None
    rekeyed = _tokens(tmp_path, clock, **{"delegation.token.secret.key": "k2"})
    with pytest.raises(KafkaError) as refused:  # the old HMAC names no token under another key
        rekeyed.renew("User:alice", first.hmac(token.token_id), 1000)
    assert refused.value.error == Errors.DELEGATION_TOKEN_NOT_FOUND


def test_without_a_secret_key_tokens_are_disabled(tmp_path):
    tokens = DelegationTokens(tmp_path, BrokerConfig({}), ManualClock())
    context = _context(tmp_path, tokens)
    answer = create_delegation_token.handle(context, _header(3), create_msg.REQUEST(renewers=[], max_lifetime_ms=-1),
                                            _session())
    assert (answer.error_code, answer.issue_timestamp_ms, answer.principal_name) == (
        Errors.DELEGATION_TOKEN_AUTH_DISABLED, 0, "alice")
    answer = describe_delegation_token.handle(context, _header(3), describe_msg.REQUEST(owners=None), _session())
    assert answer.error_code == Errors.DELEGATION_TOKEN_AUTH_DISABLED
    answer = renew_delegation_token.handle(context, _header(2), renew_msg.REQUEST(hmac=b"x", renew_period_ms=1),
                                           _session())
    assert answer.error_code == Errors.DELEGATION_TOKEN_AUTH_DISABLED
    assert tokens.credential("any", "SCRAM-SHA-256") is None


@pytest.mark.parametrize("session", [_session("PLAINTEXT", "User:ANONYMOUS"), _session("SSL", "User:ANONYMOUS"),
                                     _session(token_authenticated=True)])
def test_connections_that_may_not_ask_for_tokens(tmp_path, session):
    context = _context(tmp_path, _tokens(tmp_path, ManualClock()))
    answer = create_delegation_token.handle(context, _header(3), create_msg.REQUEST(renewers=[], max_lifetime_ms=-1),
                                            session)
    assert (answer.error_code, answer.expiry_timestamp_ms) == (Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1)


def test_ssl_with_a_client_certificate_may_ask_for_tokens(tmp_path):
    context = _context(tmp_path, _tokens(tmp_path, ManualClock()))
    answer = create_delegation_token.handle(context, _header(2), create_msg.REQUEST(renewers=[], max_lifetime_ms=-1),
                                            _session("SSL", "User:CN=client"))
    assert (answer.error_code, answer.principal_name) == (Errors.NONE, "CN=client")


NO_USERS = SimpleNamespace(get=lambda user, mechanism: None)  # a ScramStore without credentials


def _scram_login(tokens, token_id: str, password: str, extension: str = ",tokenauth=true") -> ScramServer:
    server = ScramServer("SCRAM-SHA-512", NO_USERS, tokens)
    client = ScramClient(["SCRAM-SHA-512"], token_id, password)
    first = client.get_client_first() + extension
    client.client_first_bare += extension
    client.set_server_first(server.evaluate(first.encode()).decode())
    client.set_server_final(server.evaluate(client.get_client_final().encode()).decode())
    return server


def test_scram_with_tokenauth_authenticates_the_owner(tmp_path):
    clock = ManualClock()
    tokens = _tokens(tmp_path, clock)
    token = tokens.create("User:carol", "User:alice", [], -1)
    password = base64.b64encode(tokens.hmac(token.token_id)).decode()
    server = _scram_login(tokens, token.token_id, password, ",tokenauth=TRUE")
    assert (server.user, server.token_authenticated, server.token.expires_ms) == ("carol", True, token.expiry_ms)
    with pytest.raises(ScramError):
        _scram_login(tokens, token.token_id, base64.b64encode(b"wrong").decode())
    with pytest.raises(ScramError):  # an unknown extension is ignored, so this is a user login: no such user
        _scram_login(tokens, token.token_id, password, ",other=x")
