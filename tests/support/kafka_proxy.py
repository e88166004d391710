"""A Kafka-protocol-aware TCP proxy in front of one broker, for injecting faults into a client's requests.

Each client connection gets its own connection to the broker. Requests are framed and their
headers read with ``weir.protocol`` (api key, version, correlation id) and forwarded as they
are; responses come back in order. Metadata and FindCoordinator answers are decoded and
re-encoded with the broker's address replaced by the proxy's, so the client's later
connections go through the proxy too.

Faults are queued per api key (``inject``) and each is spent on the next answer of that kind:

- an error code: the broker's answer (the request was carried out) goes back with every
  ``error_code`` field in it set to the code, re-encoded with ``weir.protocol``'s response
  codec. So a retry meets a broker that already did the work: that is what tests idempotence.
  Kinds whose repetition is an error by design (creating a topic that now exists, deleting one
  that is gone) are answered by the proxy instead, with the request never reaching the broker
  (``REFUSALS``: the answer is built from the request, the code in each item's slot).
- ``DROP``: the request reaches the broker, and the connection is closed before its answer
  reaches the client (the answer is lost; so are answers to requests pipelined behind it). For
  the ``REFUSALS`` kinds the connection closes before the request is forwarded: a lost answer
  to those is the caller's to sort out (the Java Admin, too, reports TopicExistsException when
  its retry of a CreateTopics whose answer was lost finds the topic).

An answer with no error field to set (a Metadata for no topics) leaves the fault queued.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from weir.protocol import primitives as p
from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ServerConnection
from weir.protocol.framing import FrameReader, frame
from weir.protocol.headers import decode_request_header, response_header_flexible, RequestHeader
from weir.protocol.errors import Errors
from weir.protocol.messages import BY_KEY, create_partitions, create_topics, delete_groups, delete_topics

DROP = None  # a fault that closes the connection instead of answering


@dataclass
class _Pending:
    header: RequestHeader
    answer: bytes | None = None  # the proxy's own answer (a refusal), sent when its turn comes


def _refuse_create_topics(request: Any, code: int) -> Any:
    return create_topics.RESPONSE(topics=[create_topics.TopicResult(name=t.name, error_code=code, error_message=None)
                                          for t in request.topics])


def _refuse_delete_topics(request: Any, code: int) -> Any:
    return delete_topics.RESPONSE(responses=[delete_topics.TopicResult(name=n, error_code=code)
                                             for n in request.topic_names])


def _refuse_create_partitions(request: Any, code: int) -> Any:
    return create_partitions.RESPONSE(results=[create_partitions.TopicResult(name=t.name, error_code=code,
                                                                        error_message=None)
                                               for t in request.topics])


def _refuse_delete_groups(request: Any, code: int) -> Any:
    return delete_groups.RESPONSE(results=[delete_groups.Result(group_id=g, error_code=code)
                                           for g in request.groups_names])


#: Kinds answered by the proxy itself (not carried out) when a code is injected.
REFUSALS: dict[int, Callable[[Any, int], Any]] = {
    ApiKey.CREATE_TOPICS: _refuse_create_topics, ApiKey.DELETE_TOPICS: _refuse_delete_topics,
    ApiKey.CREATE_PARTITIONS: _refuse_create_partitions, ApiKey.DELETE_GROUPS: _refuse_delete_groups,
}


def set_error_codes(message: Any, code: int) -> int:
    """Set every error code field in a decoded message (nested structs too); how many were set."""
    count = 0
    for name in getattr(type(message), "__slots__", ()):
        value = getattr(message, name)
        if name == "error_code" or name.endswith("_error_code"):
            setattr(message, name, code)
            count += 1
        elif isinstance(value, list):
            count += sum(set_error_codes(item, code) for item in value if hasattr(type(item), "__slots__"))
        elif hasattr(type(value), "__slots__") and not isinstance(value, (bytes, memoryview)):
            count += set_error_codes(value, code)
    return count


class KafkaProxy:
    def __init__(self, upstream: str):
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.faults: dict[int, deque[int | None]] = {}
        self.injected: list[tuple[str, str]] = []  # (api key name, error name or "DROP"), in the order spent
        self.requests: Counter[str] = Counter()  # requests seen per api key name
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> KafkaProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def __aenter__(self) -> KafkaProxy:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def inject(self, api_key: int, *faults: int | None) -> None:
        """Queue faults for the next answers of ``api_key``: error codes, or DROP."""
        self.faults.setdefault(api_key, deque()).extend(faults)

    def pending_faults(self) -> int:
        return sum(len(queue) for queue in self.faults.values())

    # ------------------------------------------------------------------ one client connection

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            broker_reader, broker_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        in_order: deque[_Pending] = deque()
        upstream = asyncio.create_task(self._answers(broker_reader, client_writer, in_order))
        self._tasks.add(upstream)
        try:
            requests = FrameReader(100 * 1024 * 1024)
            while data := await client_reader.read(65536):
                for payload in requests.feed(data):
                    header, body_start = decode_request_header(memoryview(payload))
                    self.requests[ApiKey(header.api_key).name] += 1
                    pending = _Pending(header)
                    refusal = self._refusal(header, memoryview(payload)[body_start:])
                    if refusal is not None:
                        pending.answer = refusal
                        in_order.append(pending)
                        self._release(in_order, client_writer)
                        continue
                    in_order.append(pending)
                    broker_writer.write(frame(bytes(payload)))
                await broker_writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            upstream.cancel()
            for writer in (broker_writer, client_writer):
                writer.close()
            self._tasks.discard(task)

    def _refusal(self, header: RequestHeader, body: memoryview) -> bytes | None:
        queue = self.faults.get(header.api_key)
        refuse = REFUSALS.get(header.api_key)
        if refuse is None or not queue:
            return None
        code = queue.popleft()
        if code is DROP:
            self.injected.append((ApiKey(header.api_key).name, "DROP"))
            raise ConnectionResetError("fault: the connection drops before the request is forwarded")
        assert code is not None
        request = BY_KEY[header.api_key].REQUEST.decode(header.api_version, body)
        self.injected.append((ApiKey(header.api_key).name, _name(code)))
        return self._encode(header, refuse(request, code))

    @staticmethod
    def _release(in_order: deque[_Pending], client_writer: asyncio.StreamWriter) -> None:
        """Write the proxy's own answers that are next in line."""
        while in_order and in_order[0].answer is not None:
            client_writer.write(in_order.popleft().answer or b"")

    async def _answers(self, broker_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter,
                       in_order: deque[_Pending]) -> None:
        responses = FrameReader(100 * 1024 * 1024)
        try:
            while data := await broker_reader.read(256 * 1024):
                for payload in responses.feed(data):
                    pending = in_order.popleft()
                    answer = self._answer(pending.header, bytes(payload))
                    if answer is None:  # DROP
                        client_writer.close()
                        return
                    client_writer.write(answer)
                    self._release(in_order, client_writer)
                await client_writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            client_writer.close()

    def _answer(self, header: RequestHeader, payload: bytes) -> bytes | None:
        api_key, version = header.api_key, header.api_version
        queue = self.faults.get(api_key)
        if queue and queue[0] is DROP:
            queue.popleft()
            self.injected.append((ApiKey(api_key).name, "DROP"))
            return None
        fault = queue[0] if queue else None
        if fault is None and api_key not in (ApiKey.METADATA, ApiKey.FIND_COORDINATOR):
            return frame(payload)
        pos = 4
        if response_header_flexible(api_key, version):
            count, pos = p.read_uvarint(payload, pos)
            for _ in range(count):
                _tag, pos = p.read_uvarint(payload, pos)
                size, pos = p.read_uvarint(payload, pos)
                pos += size
        message = BY_KEY[api_key].RESPONSE.decode(version, memoryview(payload)[pos:])
        self._point_at_proxy(api_key, message)
        if fault is not None and set_error_codes(message, fault):
            assert queue is not None
            queue.popleft()
            self.injected.append((ApiKey(api_key).name, _name(fault)))
        return self._encode(header, message)

    def _point_at_proxy(self, api_key: int, message: Any) -> None:
        if api_key == ApiKey.METADATA:
            for broker in message.brokers:
                broker.host, broker.port = "127.0.0.1", self.port
        elif api_key == ApiKey.FIND_COORDINATOR:
            for found in [message, *(getattr(message, "coordinators", None) or ())]:
                if getattr(found, "host", None):
                    found.host, found.port = "127.0.0.1", self.port

    @staticmethod
    def _encode(header: RequestHeader, message: Any) -> bytes:
        pieces = ServerConnection.encode_response(header, header.api_version, BY_KEY[header.api_key].RESPONSE,
                                                  message)
        return bytes(pieces)


def _name(code: int) -> str:
    try:
        return Errors(code).name
    except ValueError:
        return str(code)  # a code Kafka does not define (a test of unknown codes)
