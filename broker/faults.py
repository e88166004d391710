"""Test-time fault injection: the table of armed faults the dispatcher reads.

Only a broker started with ``weir.faults.enable=true`` has a ``FaultTable``; the dispatcher
(broker/dispatcher.py) then hands every decoded request to ``FaultTable.intercept`` before its
handler runs, and nothing else in the broker knows about faults. The table is driven in-process
(``weir.Broker``) or over the control channel (broker/faults_listener.py).

- ``error(api, code, times, topic, partition)``: the next ``times`` requests of ``api`` are
  answered with ``code`` where the answer carries it (protocol/error_response.py); the handler
  does not run for the affected part, whether the error is retriable or not (nothing is
  applied), and does run for the rest of a request when ``topic``/``partition`` narrow it.
- ``delay(api, seconds, times)``: the request is handled and its answer held back ``seconds``;
  its connection answers in order, so later requests on it wait too; other connections do not.
- ``disconnect(api, times)``: the connection is closed instead of answering (not handled).
- ``pause()``/``resume()``: no request is handled until resumed; connections stay open, and
  stop being read once they hold their bound (``weir.connection.max.held.bytes``).
- ``disk_full()``/``disk_ok()``: every write under the data directory fails with ENOSPC in
  broker/log/disk.py, the path a full disk takes (KAFKA_STORAGE_ERROR; reads go on).

"Validated" is what the dispatcher checks (the frame, the API key and version, the body decodes);
a handler's own checks (authorization, acks, sequence numbers) do not run for an injected error,
as the handler does not. Faults on one API fire in the order they were armed. ``fired()`` counts injected answers
(errors sent, answers delayed, connections closed) per API name.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.error_response import error_response, merge, split
from weir.protocol.errors import Errors
from weir.protocol.headers import RequestHeader
from weir.protocol.schema import Message

from .clock import Clock
from .dispatcher import NO_RESPONSE, ClosingError
from .fault_errors import BY_PARTITION, ERRORS, WHOLE_REQUEST
from .log import disk

log = logging.getLogger(__name__)


class FaultError(ValueError):
    """A fault that cannot be armed: unknown API or error, an error Kafka never answers, bad times."""


def api_name(key: ApiKey) -> str:
    """Kafka's name of an API: INIT_PRODUCER_ID -> InitProducerId."""
    return "".join(part.capitalize() for part in key.name.split("_"))


API_KEYS: dict[str, ApiKey] = {api_name(key): key for key in ApiKey}


def parse_api(api: object) -> ApiKey:
    if not isinstance(api, str) or api not in API_KEYS:
        raise FaultError(f"unknown API {api!r}; Kafka's names, e.g. Produce, Fetch, InitProducerId: "
                         f"{', '.join(sorted(API_KEYS))}")
    return API_KEYS[api]


def parse_times(times: object) -> int:
    if not isinstance(times, int) or isinstance(times, bool) or times < 1:
        raise FaultError(f"times must be a whole number of at least 1, not {times!r}")
    return times


def parse_error(key: ApiKey, code: object) -> Errors:
    if not isinstance(code, str) or code not in Errors.__members__ or code == "NONE":
        raise FaultError(f"unknown Kafka error {code!r}; its name, e.g. NOT_LEADER_OR_FOLLOWER")
    error = Errors[code]
    allowed = ERRORS.get(key)
    if allowed is None:
        raise FaultError(f"errors cannot be injected into {api_name(key)} (delay and disconnect can); "
                         f"errors can be into: {', '.join(sorted(api_name(k) for k in ERRORS))}")
    if error not in allowed:
        raise FaultError(f"Kafka never answers {api_name(key)} with {code}; it answers with: "
                         f"{', '.join(sorted(e.name for e in allowed))}")
    return error


@dataclass
class Fault:
    kind: str  # "error", "delay" or "disconnect"
    api: ApiKey
    remaining: int
    error: Errors = Errors.NONE
    seconds: float = 0.0
    topic: str | None = None
    partition: int | None = None

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"kind": self.kind, "api": api_name(self.api), "remaining": self.remaining}
        if self.kind == "error":
            described.update(code=self.error.name, topic=self.topic, partition=self.partition)
        elif self.kind == "delay":
            described["seconds"] = self.seconds
        return described


def make_error(api: object, code: object, times: object = 1, topic: object = None,
               partition: object = None) -> Fault:
    """A checked error fault (FaultError when it cannot be armed)."""
    key = parse_api(api)
    error = parse_error(key, code)
    count = parse_times(times)
    if topic is not None and (not isinstance(topic, str) or not topic):
        raise FaultError(f"topic must be a topic name, not {topic!r}")
    if partition is not None:
        if topic is None:
            raise FaultError("partition narrows a topic: give topic= too")
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise FaultError(f"partition must be a partition index (0 or more), not {partition!r}")
    if topic is not None and key not in BY_PARTITION:
        raise FaultError(f"{api_name(key)} requests name no partitions to narrow to; topic= works for "
                         f"{', '.join(sorted(api_name(k) for k in BY_PARTITION))}")
    if topic is not None and error in WHOLE_REQUEST.get(key, ()):
        raise FaultError(f"{code} answers a whole {api_name(key)} request; it cannot be narrowed to a topic")
    return Fault("error", key, count, error=error, topic=topic, partition=partition)


def make_delay(api: object, seconds: object, times: object = 1) -> Fault:
    key = parse_api(api)
    if (not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not math.isfinite(seconds)
            or seconds < 0):
        raise FaultError(f"seconds must be a number of at least 0, not {seconds!r}")
    return Fault("delay", key, parse_times(times), seconds=float(seconds))


def make_disconnect(api: object, times: object = 1) -> Fault:
    return Fault("disconnect", parse_api(api), parse_times(times))


Handle = Callable[[Any], Awaitable[Any]]


class FaultTable:
    """The armed faults of one broker, and its paused and disk-full switches."""

    def __init__(self, clock: Clock, data_dir: Path):
        self._clock = clock
        self._data_dir = data_dir
        self._armed: list[Fault] = []
        self._fired: Counter[str] = Counter()
        self._running = asyncio.Event()
        self._running.set()
        self.disk_is_full = False
        disk.fill(data_dir, False)  # a restarted in-process broker starts with its disk accepting writes

    # ---- the controls (tests, the control channel) ----

    def error(self, api: str, code: str, times: int = 1, topic: str | None = None,
              partition: int | None = None) -> None:
        self.arm(make_error(api, code, times, topic, partition))

    def delay(self, api: str, seconds: float, times: int = 1) -> None:
        self.arm(make_delay(api, seconds, times))

    def disconnect(self, api: str, times: int = 1) -> None:
        self.arm(make_disconnect(api, times))

    def arm(self, fault: Fault) -> None:
        self._armed.append(fault)
        log.warning("fault injection: armed %s", fault.describe())

    def fired(self) -> dict[str, int]:
        return dict(self._fired)

    def armed(self) -> list[dict[str, Any]]:
        return [fault.describe() for fault in self._armed]

    def clear(self) -> None:
        """Disarm every fault and zero the counts (a paused broker stays paused, a full disk full)."""
        self._armed.clear()
        self._fired.clear()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def pause(self) -> None:
        self._running.clear()
        log.warning("fault injection: paused; no request is answered until resumed")

    def resume(self) -> None:
        self._running.set()
        log.warning("fault injection: resumed")

    def disk_full(self) -> None:
        self.disk_is_full = True
        disk.fill(self._data_dir, True)

    def disk_ok(self) -> None:
        self.disk_is_full = False
        disk.fill(self._data_dir, False)

    # ---- the dispatcher's hook ----

    async def intercept(self, header: RequestHeader, body: Any, response: Message, handle: Handle) -> Any:
        """The answer to a decoded request: ``handle(body)``'s, unless an armed fault says otherwise."""
        if not self._running.is_set():
            await self._running.wait()
        fault, matched, rest = self._take(header.api_key, body)
        if fault is None:
            return await handle(body)
        name = api_name(fault.api)
        if fault.kind == "disconnect":
            self._fired[name] += 1
            raise ClosingError(f"fault injection: disconnect on {name}")
        if fault.kind == "delay":
            answer = await handle(body)
            await self._clock.sleep(fault.seconds)
            self._fired[name] += 1
            return answer
        injected = error_response(response, header.api_version, matched, fault.error,
                                  whole_request=fault.error in WHOLE_REQUEST.get(fault.api, ()))
        if rest is not None:
            answer = await handle(rest)
            injected = injected if answer is NO_RESPONSE else merge(answer, injected)
        self._fired[name] += 1
        if fault.api == ApiKey.PRODUCE and getattr(body, "acks", 1) == 0:
            return NO_RESPONSE  # acks=0 is never answered, an error neither
        return injected

    def _take(self, api_key: int, body: Any) -> tuple[Fault | None, Any, Any]:
        """The first armed fault for this request (its count taken), with the request's part it
        applies to and the part left for the handler (None: nothing left)."""
        for fault in self._armed:
            if fault.api != api_key:
                continue
            matched, rest = body, None
            if fault.topic is not None:
                parts = split(body, fault.topic, fault.partition)
                if parts is None:
                    continue
                matched, rest = parts
            fault.remaining -= 1
            if fault.remaining == 0:
                self._armed.remove(fault)
            return fault, matched, rest
        return None, None, None
