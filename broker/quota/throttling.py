"""Where the request path meets the quota manager: what a handler calls to record a client's
use and throttle it. The throttle reaches the connection through the session
(``Session.mute_ms``): broker/connection.py mutes the connection that long after the answer
(KIP-219: versions whose clients throttle themselves), or holds the answer back that long
first (older versions), as Kafka's ClientQuotaManager.throttle does."""

from __future__ import annotations

from ..security.principal import ANONYMOUS
from .manager import PRODUCE

#: KIP-219: from these versions on the client throttles itself on throttle_time_ms
CLIENT_THROTTLES_FROM = {PRODUCE: 6}


def throttle_produce(context, header, request, session, now_ms: int) -> int:
    """Record a Produce request's record bytes against producer_byte_rate; its throttle time in ms."""
    size = sum(len(partition.records) for topic in request.topic_data for partition in topic.partition_data
               if partition.records is not None)
    principal = session.principal if session is not None else ANONYMOUS
    throttle_ms = context.quotas.record(PRODUCE, principal, header.client_id or "", size, now_ms)
    if throttle_ms and session is not None:
        session.mute_ms = max(session.mute_ms, throttle_ms)
        session.answer_before_mute = header.api_version >= CLIENT_THROTTLES_FROM[PRODUCE]
    return throttle_ms
