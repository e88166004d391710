"""Delegation tokens on a Weir process: they survive a restart (kept beside the SCRAM credentials),
and a token past its lifetime ends the sessions it authenticated and, once the expiry sweep
(delegation.token.expiry.check.interval.ms) has removed it, every further login."""

from __future__ import annotations

import time

import pytest

from weir.client import Admin, Producer
from weir.client.errors import DelegationTokenNotFoundError, DelegationTokenRequestNotAllowedError
from weir.client.java_config import security_keywords

from tests.security import token_scenario
from tests.security.acl_wire import scram_login
from tests.security.brokers import ConfiguredBroker, listeners_setting
from tests.security.sasl_setup import add_scram_user, sasl_settings
from tests.security.sasl_wire import CLOSED
from tests.support.waiting import wait_until

SWEEP_MS = 300


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    settings.update({**sasl_settings(["SASL_PLAINTEXT"]), **token_scenario.token_settings(),
                     "delegation.token.expiry.check.interval.ms": str(SWEEP_MS)})
    weir = ConfiguredBroker(tmp_path_factory.mktemp("weir-tokens"), settings, ports).start()
    add_scram_user(weir.bootstrap_for("PLAINTEXT"), "alice", "alice-pw")
    yield weir
    weir.stop()


def _described(wire) -> dict:
    answer = token_scenario.describe_tokens(wire)
    assert answer.error_code == 0
    return {t.token_id: (t.principal_name, [r.principal_name for r in t.renewers], t.issue_timestamp,
                         t.expiry_timestamp, t.max_timestamp, bytes(t.hmac)) for t in answer.tokens}


def test_tokens_survive_a_restart(broker):
    sasl = broker.bootstrap_for("SASL_PLAINTEXT")
    alice = scram_login(sasl, "alice", "alice-pw")
    kept = token_scenario.create_token(alice, renewers=["User:bob"])
    error, renewed_expiry = token_scenario.renew(alice, bytes(kept.hmac), 60_000)
    assert error == 0
    gone = token_scenario.create_token(alice)
    assert token_scenario.expire(alice, bytes(gone.hmac), -1)[0] == 0
    before = _described(alice)
    alice.close()
    assert before[kept.token_id][3] == renewed_expiry and gone.token_id not in before

    broker.restart()
    alice = scram_login(sasl, "alice", "alice-pw")
    assert _described(alice) == before  # same owner, renewers, timestamps and HMAC
    wire, error, lifetime = token_scenario.token_login(sasl, kept.token_id, bytes(kept.hmac), "SCRAM-SHA-512")
    assert error == 0 and 0 < lifetime <= 60_000
    assert token_scenario.topic_visible(wire) != CLOSED  # the session serves requests
    wire.close()
    assert token_scenario.token_login(sasl, gone.token_id, bytes(gone.hmac))[1] == 58
    assert token_scenario.renew(alice, bytes(kept.hmac), 1000)[0] == 0  # renewable after the restart
    alice.close()


def test_an_expired_token_ends_its_sessions_and_then_its_logins(broker):
    sasl = broker.bootstrap_for("SASL_PLAINTEXT")
    alice = scram_login(sasl, "alice", "alice-pw")
    short = token_scenario.create_token(alice, max_lifetime_ms=3000)
    wire, error, lifetime = token_scenario.token_login(sasl, short.token_id, bytes(short.hmac))
    assert error == 0 and 0 < lifetime <= 3000  # the session lasts no longer than the token
    assert token_scenario.topic_visible(wire) != CLOSED
    wait_until(lambda: time.time() * 1000 > short.expiry_timestamp_ms, "the token's expiry")
    # the first request after the session's end closes the connection (KIP-368, as Kafka does)
    assert token_scenario.topic_visible(wire) == CLOSED
    wire.close()

    def login_refused() -> bool:
        attempt, error, _ = token_scenario.token_login(sasl, short.token_id, bytes(short.hmac))
        attempt.close()
        return error == 58

    wait_until(login_refused, "the sweep to remove the expired token")
    assert short.token_id not in _described(alice)
    assert token_scenario.renew(alice, bytes(short.hmac), 1000)[0] == 62  # DELEGATION_TOKEN_NOT_FOUND
    assert broker.log_contains(f"Delegation token expired for token: {short.token_id}")
    alice.close()


async def test_our_client_creates_tokens_and_logs_in_with_one(broker, tmp_path):
    """weir.client's Admin calls the four APIs; a Producer and an Admin log in with the token, as the
    owner (sasl_scram_token_auth, or tokenauth="true" in Java settings), and may not ask for tokens."""
    sasl = broker.bootstrap_for("SASL_PLAINTEXT")
    alice = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
             "sasl_plain_username": "alice", "sasl_plain_password": "alice-pw"}
    async with Admin(sasl, **alice) as admin:
        token = await admin.create_delegation_token(renewers=["User:bob"])
        assert (token.owner, token.requester, token.renewers) == ("User:alice", "User:alice", ("User:bob",))
        assert token.hmac == token_scenario.expected_hmac(token.token_id)
        assert [t.token_id for t in await admin.describe_delegation_tokens(["User:bob"])] == [token.token_id]
        assert await admin.renew_delegation_token(token.hmac, 60_000) <= token.max_timestamp_ms
    java = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                f'username="{token.token_id}" password="{token.password}" tokenauth="true";'}
    as_token = security_keywords(java)
    assert as_token["sasl_scram_token_auth"] is True
    async with Producer(sasl, **as_token) as producer:
        await producer.send_and_wait("token-topic", b"sent with a token")
    async with Admin(sasl, **as_token) as admin:
        with pytest.raises(DelegationTokenRequestNotAllowedError):
            await admin.describe_delegation_tokens()
    async with Admin(sasl, **alice) as admin:
        assert await admin.expire_delegation_token(token.hmac) <= time.time() * 1000
        with pytest.raises(DelegationTokenNotFoundError):
            await admin.renew_delegation_token(token.hmac)
