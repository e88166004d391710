"""Where the request path meets the quota manager: what the Produce and Fetch handlers call to
record a client's use and throttle it. The throttle reaches the connection through the session
(``Session.mute_ms``): broker/connection.py mutes the connection that long after the answer
(KIP-219: versions whose clients throttle themselves), or holds the answer back that long
first (older versions), as Kafka's ClientQuotaManager.throttle does."""

from __future__ import annotations

from ..security.principal import ANONYMOUS
from .manager import FETCH, PRODUCE

#: KIP-219: from these versions on the client throttles itself on throttle_time_ms
CLIENT_THROTTLES_FROM = {PRODUCE: 6, FETCH: 8}


def _client(header, session) -> tuple[str, str]:
    return (session.principal if session is not None else ANONYMOUS), header.client_id or ""


def _mute(session, header, kind: str, throttle_ms: int) -> None:
    if throttle_ms and session is not None:
        session.mute_ms = max(session.mute_ms, throttle_ms)
        session.answer_before_mute = header.api_version >= CLIENT_THROTTLES_FROM[kind]


def throttle_produce(context, header, request, session, now_ms: int) -> int:
    """Record a Produce request's record bytes against producer_byte_rate; its throttle time in ms."""
    size = sum(len(partition.records) for topic in request.topic_data for partition in topic.partition_data
               if partition.records is not None)
    throttle_ms = context.quotas.record(PRODUCE, *_client(header, session), size, now_ms)
    _mute(session, header, PRODUCE, throttle_ms)
    return throttle_ms


def fetch_bytes_allowed(context, header, session) -> float | None:
    """The most a Fetch may return under consumer_byte_rate, as Kafka bounds it: what the quota lets
    through in the window but one (quota x (quota.window.num - 1) x window seconds); None: no quota."""
    return context.quotas.max_in_window(FETCH, *_client(header, session))


def throttle_fetch(context, header, session, size: int, now_ms: int) -> int:
    """Record a Fetch answer's record bytes against consumer_byte_rate; its throttle time in ms. A
    throttled Fetch is answered empty (Kafka's getThrottledResponse), so its bytes are taken back."""
    principal, client_id = _client(header, session)
    throttle_ms = context.quotas.record(FETCH, principal, client_id, size, now_ms)
    if throttle_ms:
        context.quotas.record(FETCH, principal, client_id, -size, now_ms, check=False)
    _mute(session, header, FETCH, throttle_ms)
    return throttle_ms
