"""SCRAM users through AlterUserScramCredentials and DescribeUserScramCredentials, as the Java
Admin's ``alterUserScramCredentials`` / ``describeUserScramCredentials`` (and ``kafka-configs
--entity-type users``) call them.

The password never leaves the client: the Admin salts it (64 random bytes, as Kafka's
ScramFormatter) and sends the salted password, SCRAM's Hi(password, salt, iterations).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any
from dataclasses import dataclass

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import alter_user_scram_credentials as alter
from weir.protocol.messages import describe_user_scram_credentials as describe

from ..calls import ANY_BROKER, CONTROLLER, first_retriable
from .base import AdminBase, check

MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
_NAMES = {code: name for name, (code, _hash) in MECHANISMS.items()}
DEFAULT_ITERATIONS = 4096  # kafka-configs' default


@dataclass(frozen=True)
class ScramCredential:
    user: str
    mechanism: str  # SCRAM-SHA-256 or SCRAM-SHA-512
    iterations: int


def _mechanism(name: str) -> tuple[int, str]:
    try:
        return MECHANISMS[name.upper()]
    except KeyError:
        raise ValueError(f"SCRAM mechanism is SCRAM-SHA-256 or SCRAM-SHA-512, not {name!r}") from None


class UserAdmin(AdminBase):
    async def describe_user_scram_credentials(self, users: list[str] | None = None) -> list[ScramCredential]:
        """The credentials of ``users`` (every user's when None); a named user without any raises
        RESOURCE_NOT_FOUND, as the Java Admin's result does."""
        request = describe.REQUEST(users=None if users is None else [describe.UserName(name=u) for u in users])
        answer = await self._call(ANY_BROKER, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, lambda _v: request,
                                  error_of=lambda a: a.error_code)
        check(answer.error_code, answer.error_message or "DescribeUserScramCredentials")
        found = []
        for result in answer.results:
            check(result.error_code, result.error_message or result.user)
            found += [ScramCredential(result.user, _NAMES.get(c.mechanism, str(c.mechanism)), c.iterations)
                      for c in result.credential_infos]
        return found

    async def upsert_user_scram_credential(self, user: str, mechanism: str, password: str,
                                           iterations: int = DEFAULT_ITERATIONS) -> None:
        """Add or replace ``user``'s SCRAM credential for ``mechanism`` (SCRAM-SHA-256 or SCRAM-SHA-512),
        salted here with ``iterations`` rounds: the password itself never leaves the client."""
        code, hash_name = _mechanism(mechanism)
        salt = os.urandom(64)
        salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)  # SCRAM's Hi()
        await self._alter_scram([], [alter.Upsertion(name=user, mechanism=code, iterations=iterations, salt=salt,
                                               salted_password=salted)])

    async def delete_user_scram_credential(self, user: str, mechanism: str) -> None:
        """Remove ``user``'s SCRAM credential for ``mechanism``."""
        await self._alter_scram([alter.Deletion(name=user, mechanism=_mechanism(mechanism)[0])], [])

    async def _alter_scram(self, deletions: list[Any], upsertions: list[Any]) -> None:
        request = alter.REQUEST(deletions=deletions, upsertions=upsertions)
        # the controller, as the Java Admin sends it (Kafka's brokers forward it there)
        answer = await self._call(CONTROLLER, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, lambda _v: request,
                                  error_of=lambda a: first_retriable(r.error_code for r in a.results))
        for result in answer.results:
            if result.error_code != Errors.NONE:
                check(result.error_code, f"{result.user}: {result.error_message or ''}")
