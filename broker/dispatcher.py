"""Routes decoded requests to handlers; derives the ApiVersions answer from them.

A handler registers with the versions it serves. ``advertise_min`` lets an API
advertise a lower minimum than it serves: Produce advertises v0 so that
librdkafka older than 2.11.1 keeps compression on (KAFKA-18659), while v0-2
requests themselves are refused, as Kafka 4 does.
"""

from __future__ import annotations

import functools
import inspect
import logging
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar
from collections.abc import Callable

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import RawRequest, ServerConnection
from weir.protocol.errors import Errors
from weir.protocol.headers import RequestHeader
from weir.protocol.messages import BY_KEY, api_versions
from weir.protocol.response_pieces import ResponsePieces

from .quota.throttling import RequestTimer

if TYPE_CHECKING:
    from .context import BrokerContext
    from .faults import FaultTable
    from .security.session import Session

log = logging.getLogger(__name__)

#: Marker a handler returns when Kafka sends no response (Produce with acks=0).
NO_RESPONSE = object()


class ClosingError(Exception):
    """The request cannot be answered; Kafka closes the connection in this case."""


@dataclass(frozen=True)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    advertise_min: int
    fn: Callable[..., Any]
    is_async: bool
    wants_client_host: bool  # JoinGroup records where a member connects from
    wants_session: bool  # Metadata answers the listener's address; security handlers read the principal


HANDLERS: dict[int, Handler] = {}

HandlerFn = TypeVar("HandlerFn", bound=Callable[..., Any])


def handles(api_key: ApiKey, *, versions: tuple[int, int],
            advertise_min: int | None = None) -> Callable[[HandlerFn], HandlerFn]:
    def register(fn: HandlerFn) -> HandlerFn:
        schema = BY_KEY[api_key].REQUEST.versions
        if not (schema[0] <= versions[0] and versions[1] <= schema[1]):
            raise ValueError(f"{api_key.name}: versions {versions} outside the schema {schema}")
        HANDLERS[api_key] = Handler(api_key, versions[0], versions[1],
                                    versions[0] if advertise_min is None else advertise_min,
                                    fn, inspect.iscoroutinefunction(fn),
                                    "client_host" in inspect.signature(fn).parameters,
                                    "session" in inspect.signature(fn).parameters)
        return fn
    return register


def advertised_versions() -> list[tuple[int, int, int]]:
    return sorted((h.api_key, h.advertise_min, h.max_version) for h in HANDLERS.values())


class Dispatcher:
    def __init__(self, context: BrokerContext) -> None:
        self.context = context
        self._quotas = getattr(context, "quotas", None)  # client quotas (broker/quota); None in bare test contexts
        self.faults: FaultTable | None = None
        if context.config["weir.faults.enable"]:
            from .faults import FaultTable  # here: it imports this module
            self.faults = FaultTable(context.clock, context.data_dir)
        metrics = getattr(context, "metrics", None)
        if metrics is not None and metrics.enabled:
            # Swapped in only when metrics are on, so the default path pays nothing.
            self._record: Callable[[int, int, float], None] = metrics.request
            self._answer = self.dispatch
            # an instance attribute over the method: mypy refuses assigning to a method, which is the point here
            self.dispatch = self._measured_dispatch  # type: ignore[method-assign]

    async def _measured_dispatch(self, request: RawRequest, client_host: str = "",
                                 session: Session | None = None) -> ResponsePieces | None:
        """``dispatch``, timed into the request metrics (also when it raises).

        Kafka's TotalTimeMs starts when the request is read; this starts at dispatch, so
        time queued behind earlier requests on the connection is not in it.
        """
        start = perf_counter()
        try:
            return await self._answer(request, client_host, session)
        finally:
            header = request.header
            if header is not None:  # a bare SASL token is refused unrecorded
                self._record(header.api_key, header.api_version, perf_counter() - start)

    async def dispatch(self, request: RawRequest, client_host: str = "",
                       session: Session | None = None) -> ResponsePieces | None:
        """Answer one request; None when no response is due. Raises ClosingError.

        ``session`` (broker/security/session.py) is the connection's listener and principal.
        """
        header = request.header
        if header is None:  # only the authenticator takes bare tokens (broker/security/authenticator.py)
            raise ClosingError("a bare SASL token outside a SASL exchange")
        handler = HANDLERS.get(header.api_key)
        if (header.api_key == ApiKey.API_VERSIONS and handler
                and not handler.min_version <= header.api_version <= handler.max_version):
            return self._unsupported_api_versions(header)  # newer or negative: Kafka answers both in v0
        if handler is None:
            raise ClosingError(f"unknown api key {header.api_key}")
        if not handler.min_version <= header.api_version <= handler.max_version:
            raise ClosingError(f"{ApiKey(header.api_key).name} v{header.api_version} is not supported "
                               f"(served: v{handler.min_version}-{handler.max_version})")
        module = BY_KEY[header.api_key]
        body = module.REQUEST.decode(header.api_version, request.body, exact=False)
        if session is not None:
            session.api_key = header.api_key  # the authorizer's audit log names the request
        if self.faults is None:
            result = await self._handle(handler, header, body, client_host, session)
        else:  # a broker started for tests (weir.faults.enable): the one place faults are applied
            result = await self.faults.intercept(header, body, module.RESPONSE, functools.partial(
                self._handle, handler, header, client_host=client_host, session=session))
        if result is NO_RESPONSE:
            return None
        return ServerConnection.encode_response(header, header.api_version, module.RESPONSE, result)

    async def _handle(self, handler: Handler, header: RequestHeader, body: Any, client_host: str = "",
                      session: Session | None = None) -> Any:
        # client quotas (broker/quota): request_percentage times the handler, only while such a quota is set
        quotas = self._quotas
        timer = RequestTimer(self.context, header, session) if quotas and quotas.times_requests else None
        if handler.wants_client_host and handler.wants_session:
            result = handler.fn(self.context, header, body, client_host=client_host, session=session)
        elif handler.wants_client_host:
            result = handler.fn(self.context, header, body, client_host=client_host)
        elif handler.wants_session:
            result = handler.fn(self.context, header, body, session=session)
        else:
            result = handler.fn(self.context, header, body)
        if timer is not None:
            timer.called()
            result = timer.finish(await timer.run(result) if handler.is_async else result)
        elif handler.is_async:
            result = await result
        return result

    @staticmethod
    def _unsupported_api_versions(header: RequestHeader) -> ResponsePieces:
        """A v0 body with UNSUPPORTED_VERSION and our ApiVersions range, as Kafka answers."""
        handler = HANDLERS[ApiKey.API_VERSIONS]
        body = api_versions.RESPONSE(error_code=Errors.UNSUPPORTED_VERSION, api_keys=[
            api_versions.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=handler.advertise_min,
                                    max_version=handler.max_version)])
        return ServerConnection.encode_response(header, 0, api_versions.RESPONSE, body)
