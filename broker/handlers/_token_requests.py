"""What the four delegation-token handlers share: who may ask for tokens at all, and principals
as (type, name), as KafkaApis.allowTokenRequests and KafkaPrincipal have them."""

from __future__ import annotations

from ..security.principal import ANONYMOUS


def allowed(session) -> bool:
    """Kafka refuses token requests over PLAINTEXT, over SSL without a client certificate, and on
    a connection that itself authenticated with a token. No session: the broker itself."""
    if session is None:
        return True
    protocol = session.listener.protocol
    return not (session.token_authenticated or protocol == "PLAINTEXT"
                or (protocol == "SSL" and session.principal == ANONYMOUS))


def principal_of(session) -> str:
    return session.principal if session is not None else ANONYMOUS


def split(principal: str) -> tuple[str, str]:
    """``User:alice`` -> (User, alice)."""
    kind, _, name = principal.partition(":")
    return kind, name
