"""Errors the client raises: one exception class per Kafka error code.

``error_for(code)`` gives the class named after Kafka's code (``NotCoordinatorError``
for NOT_COORDINATOR, ...). Each class says how a caller may react:

- ``retriable``: sending the same request again may succeed (Kafka's table,
  ``protocol.errors``).
- ``fatal``: a transactional producer that sees it can only be closed, as the
  Java client's TransactionManager treats it (fenced, authorization, version).
- ``abortable``: inside a transaction, anything else that is not retriable:
  abort the transaction and carry on.
"""

from __future__ import annotations

from weir.protocol.errors import Errors


class KafkaException(Exception):
    """Base of every error this client raises."""


class KafkaTimeoutError(KafkaException):
    """An operation did not finish within its deadline."""


class KafkaConnectionError(KafkaException, ConnectionError):
    """A broker could not be reached or dropped the connection."""
    retriable = True


class IllegalStateError(KafkaException):
    """A call that the object's state does not allow (e.g. send outside a transaction)."""


class BrokerResponseError(KafkaException):
    """A broker answered with an error code."""

    code: int = -1
    retriable: bool = False
    fatal: bool = False

    def __init__(self, message: str | None = None):
        self.message = message
        super().__init__(f"[{self.name}] {message}" if message else self.name)

    @property
    def name(self) -> str:
        return Errors(self.code).name

    @property
    def abortable(self) -> bool:
        return not (self.fatal or self.retriable)


# The Java producer closes itself after these (TransactionManager's fatal transitions).
_FATAL = frozenset({
    Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED,
    Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Errors.CLUSTER_AUTHORIZATION_FAILED,
    Errors.UNSUPPORTED_VERSION, Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, Errors.INVALID_PRODUCER_ID_MAPPING,
})


def _class_name(error: Errors) -> str:
    name = "".join(part.capitalize() for part in error.name.split("_"))
    return name if name.endswith(("Error", "Exception")) else name + "Error"


def _build() -> dict[int, type[BrokerResponseError]]:
    classes = {}
    for error in Errors:
        if error == Errors.NONE:
            continue
        cls = type(_class_name(error), (BrokerResponseError,), {
            "code": int(error), "retriable": error.retriable, "fatal": error in _FATAL,
            "__doc__": f"Kafka error {int(error)}, {error.name}.", "__module__": __name__})
        classes[int(error)] = cls
        globals()[cls.__name__] = cls
    return classes


_BY_CODE = _build()


def error_for(code: int) -> type[BrokerResponseError]:
    """The exception class for a Kafka error code (UnknownServerError for codes we do not know)."""
    return _BY_CODE.get(code) or _BY_CODE[int(Errors.UNKNOWN_SERVER_ERROR)]


def raise_for(code: int, message: str | None = None) -> None:
    """Raise the exception named by ``code``; do nothing for NONE."""
    if code:
        raise error_for(code)(message)
