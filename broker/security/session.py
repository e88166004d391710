"""What a connection knows about who speaks on it: its listener, the client's address and
its principal. The connection owns it (authentication belongs to the connection); handlers
that need it take a ``session`` parameter and only read it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .listeners import ListenerSpec
from .principal import ANONYMOUS


@dataclass
class Session:
    listener: ListenerSpec
    client_host: str  # "/1.2.3.4", as Kafka shows a member's host
    principal: str = ANONYMOUS
    # run when the connection closes, by key: share sessions end with their connection (KIP-932)
    on_close: dict[object, Callable[[], None]] = field(default_factory=dict)
    authenticated: bool = False  # True once TLS/SASL (or nothing, on PLAINTEXT) let requests through
    mechanism: str | None = None  # the SASL mechanism that authenticated it
    token_authenticated: bool = False  # by a delegation token: it may not ask for tokens (Kafka's rule)
    api_key: int | None = None  # the request being handled (the dispatcher sets it; the audit log names it)
    expires_at_ms: int | None = None  # KIP-368: past it, the next request other than a re-authentication closes it
    can_reauthenticate: bool = False  # the client authenticated through SaslAuthenticate v1+ (KIP-368)
    peer: str = ""  # "ip:port" of the client's end
    client_software: tuple[str, str] = ("", "")  # name and version from ApiVersions v3+ (KIP-511; KIP-714 selectors)
    mute_ms: int = 0  # client quotas: a handler asks to mute the connection this long (broker/quota/throttling.py)
    answer_before_mute: bool = True  # KIP-219: the answer goes first and the client waits too; else it is held

    def expired(self, now_ms: int) -> bool:
        # ">=": a session given no time at all (a credential already past its expiry) ends before its
        # next request, as Kafka's nanosecond comparison makes it in practice
        return self.expires_at_ms is not None and now_ms >= self.expires_at_ms


def advertised_address(context, session: Session | None) -> tuple[str, int]:
    """The address a client should use: its own listener's advertised one (the first listener's
    when a handler is called without a connection, as in handler tests)."""
    if session is not None:
        return session.listener.advertised_host, session.listener.advertised_port
    return context.advertised_host, context.advertised_port
