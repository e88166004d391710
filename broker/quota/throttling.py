"""Where the request path meets the quota manager: what the Produce and Fetch handlers call to
record a client's use and throttle it. The throttle reaches the connection through the session
(``Session.mute_ms``): broker/connection.py mutes the connection that long after the answer
(KIP-219: versions whose clients throttle themselves), or holds the answer back that long
first (older versions), as Kafka's ClientQuotaManager.throttle does."""

from __future__ import annotations

from ..security.principal import ANONYMOUS
from time import perf_counter

from weir.protocol.errors import Errors, KafkaError

from .manager import FETCH, MUTATIONS, PRODUCE, REQUESTS

#: KIP-219: from these versions on the client throttles itself on throttle_time_ms
CLIENT_THROTTLES_FROM = {PRODUCE: 6, FETCH: 8, MUTATIONS: 0, REQUESTS: 0}


def _client(header, session) -> tuple[str, str]:
    return (session.principal if session is not None else ANONYMOUS), header.client_id or ""


def _mute(session, header, kind: str, throttle_ms: int) -> None:
    if throttle_ms and session is not None:
        session.mute_ms = max(session.mute_ms, throttle_ms)
        session.answer_before_mute = header.api_version >= CLIENT_THROTTLES_FROM[kind]


class RequestTimer:
    """request_percentage for one request (made by the dispatcher only while such a quota is set):
    the time its handler runs, without the time it waits (a long poll, an fsync), as Kafka counts
    a request handler thread's time; recorded as the percentage of a second it is, throttled as the
    byte rates are. Simplifications: every API's answer goes first and the connection is muted
    after it (Kafka holds the answer back for versions older than KIP-219's per API, and answers a
    Fetch throttled by this quota empty); network thread time is not counted."""

    def __init__(self, context, header, session):
        self._context, self._header, self._session = context, header, session
        self._seconds = 0.0
        self._began = perf_counter()

    def called(self) -> None:
        """The handler returned (a sync handler's whole run, an async one's coroutine creation)."""
        self._seconds += perf_counter() - self._began

    async def run(self, coroutine):
        """Await an async handler's coroutine, timing only the slices it runs."""
        return await _Slices(coroutine, self)

    def finish(self, result):
        principal, client_id = _client(self._header, self._session)
        throttle_ms = self._context.quotas.record(REQUESTS, principal, client_id, self._seconds * 100,
                                                  self._context.clock.now_ms())
        if throttle_ms:
            if hasattr(result, "throttle_time_ms"):
                result.throttle_time_ms = max(result.throttle_time_ms or 0, throttle_ms)
            _mute(self._session, self._header, REQUESTS, throttle_ms)
        return result


class _Slices:
    """Drives a coroutine step by step, adding each step's run time to a RequestTimer."""

    def __init__(self, coroutine, timer: RequestTimer):
        self._coroutine, self._timer = coroutine, timer

    def __await__(self):
        steps = self._coroutine.__await__()
        sent, thrown = None, None
        while True:
            began = perf_counter()
            try:
                yielded = steps.throw(thrown) if thrown is not None else steps.send(sent)
            except StopIteration as done:
                self._timer._seconds += perf_counter() - began
                return done.value
            self._timer._seconds += perf_counter() - began
            try:
                sent, thrown = (yield yielded), None
            except BaseException as exc:  # noqa: BLE001 (cancellation and the like go to the handler)
                sent, thrown = None, exc


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


class ControllerMutations:
    """controller_mutation_rate for one CreateTopics, CreatePartitions or DeleteTopics request, as
    Kafka's Strict/PermissiveControllerMutationQuota: ``take(partitions)`` per topic before it is
    changed, ``throttle_ms()`` for the answer (and the connection's mute)."""

    def __init__(self, context, header, session, strict_since: int):
        principal, client_id = _client(header, session)
        self._found = context.quotas.mutations(principal, client_id)
        self._strict = header.api_version >= strict_since
        self._clock = context.clock
        self._session, self._header = session, header
        self._throttle_ms = 0

    def take(self, partitions: int) -> None:
        """Record ``partitions`` mutations; KafkaError(THROTTLING_QUOTA_EXCEEDED) refuses the topic
        when the quota is strict and already exceeded."""
        if self._found is None:
            return
        quota, bucket = self._found
        now_ms = self._clock.now_ms()
        if self._strict:
            tokens = bucket.measure(quota, now_ms)
            if tokens < 0:
                self._throttle_ms = round(-tokens / quota * 1000)
                raise KafkaError(Errors.THROTTLING_QUOTA_EXCEEDED)  # no message, as Kafka 4.4.0 answers
            bucket.record(quota, partitions, now_ms)
        else:
            bucket.record(quota, partitions, now_ms)
            tokens = bucket.measure(quota, now_ms)
            if tokens < 0:
                self._throttle_ms = round(-tokens / quota * 1000)

    def throttle_ms(self) -> int:
        _mute(self._session, self._header, MUTATIONS, self._throttle_ms)
        return self._throttle_ms
