"""Errors the client raises: one exception class per Kafka error code (``error_codes.py``).

``error_for(code)`` gives the class named after Kafka's code (``NotCoordinatorError`` for
NOT_COORDINATOR, ...); ``error_instance(code, message, request=...)`` builds the error a caller
sees. Every ``BrokerResponseError`` keeps its numeric ``code``, also one this client has no class
for (an ``UnknownServerError`` whose ``code`` is the number the broker sent), and the request
it answered. How a caller may react is ``error_policy.classify(request, code)``, read through:

- ``retriable``: sending the same request again may succeed (Kafka's table).
- ``fatal``: a producer that sees it can only be closed (fenced, authorization, version).
- ``abortable``: inside a transaction, abort it and carry on.
"""

from __future__ import annotations

from typing import ClassVar

from weir.protocol.errors import Errors

from .error_policy import Outcome, classify, is_retriable


class KafkaException(Exception):
    """Base of every error this client raises."""

    retriable: bool = False

    @property
    def fatal(self) -> bool:
        return False

    @property
    def abortable(self) -> bool:
        return False


class KafkaTimeoutError(KafkaException):
    """An operation did not finish within its deadline; ``last_cause`` is the last retriable error
    it met on the way (also its ``__cause__``), None if it simply ran out of time."""

    def __init__(self, message: str, last_cause: BaseException | None = None):
        super().__init__(f"{message} (last error: {last_cause})" if last_cause is not None else message)
        self.last_cause = last_cause


class KafkaConnectionError(KafkaException, ConnectionError):
    """A broker could not be reached or dropped the connection."""
    retriable = True


class SslAuthenticationError(KafkaException):
    """The TLS handshake failed (an untrusted or mismatched certificate): as the Java client's
    SslAuthenticationException, not retried, since retrying cannot change the answer."""
    retriable = False


class IllegalStateError(KafkaException):
    """A call that the object's state does not allow (e.g. send outside a transaction)."""


class BrokerResponseError(KafkaException):
    """A broker answered with an error code."""

    code: int = Errors.UNKNOWN_SERVER_ERROR
    retriable: bool = False  # per code (Kafka's RetriableException): set on each class from the table
    _by_code: ClassVar[dict[int, type[BrokerResponseError]]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__:
            cls.retriable = is_retriable(cls.code)
            cls.__doc__ = cls.__doc__ or f"Kafka error {int(cls.code)}, {Errors(cls.code).name}."
            BrokerResponseError._by_code.setdefault(int(cls.code), cls)

    def __init__(self, message: str | None = None, *, code: int | None = None, request: int | None = None):
        if code is not None:
            self.code = code
        self.request = request  # the ApiKey this answered, when known: it decides fatal / abortable
        self.message = message
        super().__init__(f"[{self.name}] {message}" if message else self.name)

    @property
    def name(self) -> str:
        try:
            return Errors(self.code).name
        except ValueError:
            return f"UNKNOWN_ERROR_CODE_{self.code}"

    @property
    def outcome(self) -> Outcome:
        return classify(self.request, self.code)

    @property
    def fatal(self) -> bool:
        return self.outcome is Outcome.FATAL

    @property
    def abortable(self) -> bool:
        return self.outcome in (Outcome.ABORTABLE, Outcome.ABORTABLE_WITH_BUMP)


def error_for(code: int) -> type[BrokerResponseError]:
    """The exception class for a Kafka error code (UnknownServerError for codes we do not know)."""
    return BrokerResponseError._by_code.get(code) or BrokerResponseError._by_code[Errors.UNKNOWN_SERVER_ERROR]


def error_instance(code: int, message: str | None = None, *, request: int | None = None) -> BrokerResponseError:
    """The error for ``code``; it keeps the code even when no class is named after it."""
    return error_for(code)(message, code=code, request=request)


def raise_for(code: int, message: str | None = None, *, request: int | None = None) -> None:
    """Raise the error named by ``code``; do nothing for NONE."""
    if code:
        raise error_instance(code, message, request=request)


# Every class named after a code, re-exported here (they subclass BrokerResponseError above).
from .error_codes import *  # noqa: E402,F403
