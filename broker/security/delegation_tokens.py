"""Delegation tokens (KIP-48, KIP-373): their one owner, kept durably and loaded at start-up.

Kafka keeps them as DelegationTokenRecord / RemoveDelegationTokenRecord in its metadata log
(the controller's DelegationTokenControlManager decides, every broker's DelegationTokenCache
serves); one process keeps the resulting set in ``<data-dir>/delegation-tokens.json``,
replaced durably (broker/log/disk.py) before a create, renew or expire is answered, as
scram_store.py keeps SCRAM credentials. A write that fails changes nothing and is answered
with its error.

A token is (id, owner, requester, renewers, issue, expiry and max timestamps). Its HMAC is
HmacSHA512 of the id keyed with ``delegation.token.secret.key`` and is never stored: it is
computed again, so changing the key invalidates every token handed out, as in Kafka. The
token authenticates by SCRAM (either mechanism) with the id as user name, the HMAC in
base64 as password and the ``tokenauth=true`` extension; its SCRAM credential is derived
from that password with a fresh salt and 4096 iterations, as Kafka's cache derives it.

Expired tokens (past their expiry or max timestamp) stay until the sweep removes them every
``delegation.token.expiry.check.interval.ms``, as Kafka's controller sweeps: until then they
are described and still authenticate (for a session that ends at once). Simplification: the
sweep runs when the tokens are next looked at once the interval has passed, not on a timer;
nothing can tell the two apart.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from weir.protocol.errors import Errors, KafkaError

from ..log.disk import replace_durably
from .scram import MIN_ITERATIONS, ScramCredential, credential_from_salted_password, salted_password

log = logging.getLogger(__name__)

FILE_NAME = "delegation-tokens.json"
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    owner: str  # "User:alice", as Kafka's KafkaPrincipal prints
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int

    @property
    def expires_ms(self) -> int:
        """When a session it authenticated must end (the authenticator's credential lifetime)."""
        return self.expiry_ms

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms

    def owner_or_renewer(self, principal: str) -> bool:
        """Kafka's TokenInformation.ownerOrRenewer (who sees a token described): the requester too."""
        return principal in (self.owner, self.requester) or principal in self.renewers

    def may_renew(self, principal: str) -> bool:
        """The controller's allowedToRenew (renew and expire): owner or renewer, not the requester."""
        return principal == self.owner or principal in self.renewers


def _sum(now_ms: int, duration_ms: int) -> int:
    return LONG_MAX if now_ms > LONG_MAX - duration_ms else now_ms + duration_ms


class DelegationTokens:
    def __init__(self, data_dir: Path, config, clock):
        self._path = Path(data_dir) / FILE_NAME
        self._clock = clock
        secret = config["delegation.token.secret.key"]
        self.enabled = bool(secret)  # Kafka: no key (or an empty one) switches tokens off
        self._secret = secret.encode()
        self._max_lifetime_ms: int = config["delegation.token.max.lifetime.ms"]
        self._renew_ms: int = config["delegation.token.expiry.time.ms"]
        self._sweep_interval_ms: int = config["delegation.token.expiry.check.interval.ms"]
        self._next_sweep_ms = clock.now_ms() + self._sweep_interval_ms
        self._tokens: dict[str, TokenInfo] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._credentials: dict[tuple[str, str], ScramCredential] = {}  # (token id, mechanism), derived lazily

    def load(self) -> None:
        if not self._path.exists():
            return
        tokens = [TokenInfo(**{**entry, "renewers": tuple(entry["renewers"])})
                  for entry in json.loads(self._path.read_text())]
        self._install({token.token_id: token for token in tokens})
        log.info("loaded %d delegation token(s)", len(tokens))

    def _install(self, tokens: dict[str, TokenInfo]) -> None:
        self._tokens = tokens
        self._by_hmac = {self.hmac(token_id): token_id for token_id in tokens} if self.enabled else {}
        self._credentials = {key: credential for key, credential in self._credentials.items() if key[0] in tokens}

    def _store(self, tokens: dict[str, TokenInfo]) -> None:
        """Write ``tokens`` durably, then serve them (KafkaError from the disk: nothing changes)."""
        replace_durably(self._path, json.dumps([asdict(token) for token in tokens.values()], indent=0).encode())
        self._install(tokens)

    def hmac(self, token_id: str) -> bytes:
        return hmac.new(self._secret, token_id.encode(), hashlib.sha512).digest()

    def _sweep(self) -> None:
        now = self._clock.now_ms()
        if now < self._next_sweep_ms:
            return
        self._next_sweep_ms = now + self._sweep_interval_ms
        expired = [token for token in self._tokens.values() if token.expired(now)]
        if not expired:
            return
        for token in expired:
            log.info("Delegation token expired for token: %s for owner: %s", token.token_id, token.owner)
        try:
            self._store({token_id: token for token_id, token in self._tokens.items() if token not in expired})
        except KafkaError:
            self._next_sweep_ms = now  # the disk refused: try again at the next look
            log.warning("could not remove %d expired delegation token(s); will retry", len(expired))

    # -- the requests (DelegationTokenControlManager's rules) ------------------------------

    def create(self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int) -> TokenInfo:
        """A new token; KafkaError(DELEGATION_TOKEN_AUTH_DISABLED or the disk's error) else."""
        if not self.enabled:
            raise KafkaError(Errors.DELEGATION_TOKEN_AUTH_DISABLED)
        self._sweep()
        now = self._clock.now_ms()
        lifetime = min(self._max_lifetime_ms, max_lifetime_ms) if max_lifetime_ms > 0 else self._max_lifetime_ms
        max_ms = _sum(now, lifetime)
        token = TokenInfo(_kafka_uuid(), owner, requester, tuple(renewers), now,
                          min(max_ms, _sum(now, self._renew_ms)), max_ms)
        self._store({**self._tokens, token.token_id: token})
        log.info("Created delegation token %s for owner %s (requested by %s)", token.token_id, owner, requester)
        return token

    def renew(self, principal: str, token_hmac: bytes, renew_period_ms: int) -> int:
        """The new expiry timestamp; KafkaError with Kafka's code when refused."""
        token = self._token_for(token_hmac)
        now = self._clock.now_ms()
        if token.expired(now):
            raise KafkaError(Errors.DELEGATION_TOKEN_EXPIRED)
        if not token.may_renew(principal):
            raise KafkaError(Errors.DELEGATION_TOKEN_OWNER_MISMATCH)
        period = min(self._renew_ms, renew_period_ms) if renew_period_ms > 0 else self._renew_ms
        expiry = min(token.max_ms, now + period)
        self._store({**self._tokens, token.token_id: _with_expiry(token, expiry)})
        return expiry

    def expire(self, principal: str, token_hmac: bytes, expiry_period_ms: int) -> int:
        """The token's new expiry timestamp (a negative period removes it at once)."""
        token = self._token_for(token_hmac)
        if not token.may_renew(principal):
            raise KafkaError(Errors.DELEGATION_TOKEN_OWNER_MISMATCH)
        now = self._clock.now_ms()
        if expiry_period_ms < 0:
            self._store({token_id: t for token_id, t in self._tokens.items() if token_id != token.token_id})
            log.info("Delegation token %s expired by %s", token.token_id, principal)
            return now
        if token.expired(now):
            raise KafkaError(Errors.DELEGATION_TOKEN_EXPIRED)
        expiry = min(token.max_ms, _sum(now, expiry_period_ms))
        self._store({**self._tokens, token.token_id: _with_expiry(token, expiry)})
        return expiry

    def _token_for(self, token_hmac: bytes) -> TokenInfo:
        if not self.enabled:
            raise KafkaError(Errors.DELEGATION_TOKEN_AUTH_DISABLED)
        self._sweep()
        token_id = self._by_hmac.get(bytes(token_hmac))
        if token_id is None:
            raise KafkaError(Errors.DELEGATION_TOKEN_NOT_FOUND)
        return self._tokens[token_id]

    def tokens(self) -> list[TokenInfo]:
        """Every token not yet swept, for DescribeDelegationToken to filter."""
        self._sweep()
        return list(self._tokens.values())

    # -- authentication (ScramServer with tokenauth=true) ---------------------------------

    def credential(self, token_id: str, mechanism: str) -> tuple[ScramCredential, TokenInfo] | None:
        """The SCRAM credential a token authenticates with, and the token; None for no such token."""
        if not self.enabled:
            return None
        self._sweep()
        token = self._tokens.get(token_id)
        if token is None:
            return None
        credential = self._credentials.get((token_id, mechanism))
        if credential is None:
            password = base64.b64encode(self.hmac(token_id)).decode()
            salt = os.urandom(16)
            credential = credential_from_salted_password(
                mechanism, salt, salted_password(mechanism, password, salt, MIN_ITERATIONS), MIN_ITERATIONS)
            self._credentials[(token_id, mechanism)] = credential
        return credential, token


def _kafka_uuid() -> str:
    """A token id as Kafka's Uuid.randomUuid prints one: a random (version 4) UUID in URL-safe base64
    without padding, drawn again if it holds a '-' (it could read as a command-line option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if "-" not in text:
            return text


def _with_expiry(token: TokenInfo, expiry_ms: int) -> TokenInfo:
    return TokenInfo(token.token_id, token.owner, token.requester, token.renewers, token.issue_ms, expiry_ms,
                     token.max_ms)
