"""Delegation tokens (KIP-48, KIP-373) as the Java Admin's ``createDelegationToken``,
``describeDelegationToken``, ``renewDelegationToken`` and ``expireDelegationToken`` (and
``kafka-delegation-tokens``) call them: sent to any broker (Kafka's brokers forward them to
their controller). Kafka refuses them on PLAINTEXT connections and on connections that logged in
with a token (DelegationTokenRequestNotAllowedError).

A token logs in by SCRAM: ``sasl_plain_username=token.token_id``,
``sasl_plain_password=token.password`` and ``sasl_scram_token_auth=True``.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import (create_delegation_token, describe_delegation_token, expire_delegation_token,
                                    renew_delegation_token)

from ..calls import ANY_BROKER
from .base import AdminBase, check


@dataclass(frozen=True)
class DelegationToken:
    """A delegation token as CreateDelegationToken and DescribeDelegationToken answer it; principals
    as ``User:alice``, timestamps in ms since the epoch."""

    token_id: str
    hmac: bytes
    owner: str  # "User:alice"
    requester: str  # who asked for it (KIP-373); the owner unless created for another
    renewers: tuple[str, ...]
    issue_timestamp_ms: int
    expiry_timestamp_ms: int
    max_timestamp_ms: int

    @property
    def password(self) -> str:
        """The SCRAM password a token logs in with: its HMAC in base64, as kafka-delegation-tokens prints it."""
        return base64.b64encode(self.hmac).decode()


def _principal(text: str) -> tuple[str, str]:
    kind, sep, name = text.partition(":")
    if not sep:
        raise ValueError(f"a principal is <type>:<name> (User:alice), not {text!r}")
    return kind, name


class TokenAdmin(AdminBase):
    async def create_delegation_token(self, renewers: Sequence[str] = (), max_lifetime_ms: int = -1,
                                      owner: str | None = None) -> DelegationToken:
        """A new token for this connection's principal, or for ``owner`` (needs CREATE_TOKENS on that
        User resource); ``renewers`` may renew it too; -1: the broker's delegation.token.max.lifetime.ms."""
        owner_type, owner_name = _principal(owner) if owner else (None, None)
        request = create_delegation_token.REQUEST(
            owner_principal_type=owner_type, owner_principal_name=owner_name, max_lifetime_ms=max_lifetime_ms,
            renewers=[create_delegation_token.Renewer(principal_type=kind, principal_name=name)
                      for kind, name in map(_principal, renewers)])
        answer = await self._call(ANY_BROKER, ApiKey.CREATE_DELEGATION_TOKEN, lambda _v: request,
                                  error_of=lambda a: a.error_code)
        check(answer.error_code, "CreateDelegationToken")
        requester = (f"{answer.token_requester_principal_type}:{answer.token_requester_principal_name}"
                     if answer.token_requester_principal_type else f"{answer.principal_type}:{answer.principal_name}")
        return DelegationToken(answer.token_id, bytes(answer.hmac), f"{answer.principal_type}:{answer.principal_name}",
                               requester, tuple(renewers), answer.issue_timestamp_ms, answer.expiry_timestamp_ms,
                               answer.max_timestamp_ms)

    async def describe_delegation_tokens(self, owners: list[str] | None = None) -> list[DelegationToken]:
        """The tokens this principal may see (its own, those it requested or renews, others' by ACL),
        of ``owners`` only when given."""
        request = describe_delegation_token.REQUEST(owners=None if owners is None else [
            describe_delegation_token.Owner(principal_type=kind, principal_name=name)
            for kind, name in map(_principal, owners)])
        answer = await self._call(ANY_BROKER, ApiKey.DESCRIBE_DELEGATION_TOKEN, lambda _v: request,
                                  error_of=lambda a: a.error_code)
        check(answer.error_code, "DescribeDelegationToken")
        return [DelegationToken(
            t.token_id, bytes(t.hmac), f"{t.principal_type}:{t.principal_name}",
            f"{t.token_requester_principal_type}:{t.token_requester_principal_name}" if t.token_requester_principal_type
            else f"{t.principal_type}:{t.principal_name}",
            tuple(f"{r.principal_type}:{r.principal_name}" for r in t.renewers), t.issue_timestamp, t.expiry_timestamp,
            t.max_timestamp) for t in answer.tokens]

    async def renew_delegation_token(self, hmac: bytes, renew_period_ms: int = -1) -> int:
        """The token's new expiry timestamp (at most delegation.token.expiry.time.ms away; -1: that)."""
        request = renew_delegation_token.REQUEST(hmac=hmac, renew_period_ms=renew_period_ms)
        answer = await self._call(ANY_BROKER, ApiKey.RENEW_DELEGATION_TOKEN, lambda _v: request,
                                  error_of=lambda a: a.error_code)
        check(answer.error_code, "RenewDelegationToken")
        return int(answer.expiry_timestamp_ms)

    async def expire_delegation_token(self, hmac: bytes, expiry_time_period_ms: int = -1) -> int:
        """Bring the token's expiry forward to now + the period; -1 (the default) expires it at once."""
        request = expire_delegation_token.REQUEST(hmac=hmac, expiry_time_period_ms=expiry_time_period_ms)
        answer = await self._call(ANY_BROKER, ApiKey.EXPIRE_DELEGATION_TOKEN, lambda _v: request,
                                  error_of=lambda a: a.error_code)
        check(answer.error_code, "ExpireDelegationToken")
        return int(answer.expiry_timestamp_ms)
