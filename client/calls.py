"""The one way this client calls the cluster: send a request to a target, retry what may be retried.

``Cluster.call(target, api_key, build, ...)`` resolves the target to a broker (a partition's
leader, the coordinator of a group or transactional id, the controller, a given node, any
broker), sends, and reads the answer's code with the caller's ``error_of``. A retriable code
(Kafka's table: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
CONCURRENT_TRANSACTIONS, REQUEST_TIMED_OUT, ...), a dropped connection, a request that timed
out, or a FindCoordinator / Metadata that failed on the way is retried: metadata is refreshed
when a leader or the controller moved, the coordinator is looked up again when it moved or its
connection failed (what the Java client's NetworkClient and ``markCoordinatorUnknown`` /
``lookupCoordinator`` do), and the next attempt waits the KIP-580 backoff: retry.backoff.ms
doubling per attempt up to retry.backoff.max.ms, with 20% jitter (``ExponentialBackoff``). When
the caller's deadline would pass first, ``KafkaTimeoutError`` carries the last cause. Any other
answer, success or not, is returned: the caller reads its other codes (``raise_for`` with the
request kind, so ``fatal`` / ``abortable`` are the taxonomy's, ``error_policy``).

``call_leaders`` does the same for a request about many partitions: grouped by leader, one
request per leader, and only the partitions answered with a retriable code are asked again.

Produce and Fetch do not go through ``call``, as in the Java client, whose Sender and Fetcher
own their requests: the sender pipelines Produce requests and retries per batch (idempotence
needs the batches' order kept, sender.py), backing a batch off with the same KIP-580 policy;
the fetcher's loop answers a retriable partition error by forgetting the leader and fetching
again after a metadata refresh. Both classify codes with the same ``error_policy``.

Deviations from the Java client: the Java TransactionManager re-enqueues after a flat
retry.backoff.ms and its consumer coordinator rejoins after a coordinator error on SyncGroup;
here every request takes the same exponential backoff and a request is sent again as it was
(a coordinator that did not see the group's rebalance answers it with UNKNOWN_MEMBER_ID or
ILLEGAL_GENERATION, which the group handles by rejoining, so the outcome is the same).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Iterable

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors

from .errors import BrokerResponseError, KafkaConnectionError, KafkaException, KafkaTimeoutError, error_instance
from .error_policy import is_retriable
from .types import TopicPartition

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Leader:
    """The leader of one partition."""
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class Coordinator:
    """The coordinator of a group (key type 0) or a transactional id (key type 1)."""
    key_type: int
    key: str


@dataclass(frozen=True, slots=True)
class Broker:
    """One given broker."""
    node_id: int


@dataclass(frozen=True, slots=True)
class AnyBroker:
    """Whichever broker is reachable (bootstrap addresses before the first Metadata)."""


@dataclass(frozen=True, slots=True)
class Controller:
    """The broker the cluster names its controller (what the Java Admin sends topic changes to)."""


Target = Leader | Coordinator | Broker | AnyBroker | Controller
ANY_BROKER = AnyBroker()
CONTROLLER = Controller()

#: Answers after which the metadata is stale (the Java client's InvalidMetadataException, and
#: NOT_CONTROLLER, on which the Java Admin refreshes its metadata).
METADATA_STALE = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                            Errors.LEADER_NOT_AVAILABLE, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH,
                            Errors.KAFKA_STORAGE_ERROR, Errors.NOT_CONTROLLER})
#: Answers after which the coordinator is looked up again (markCoordinatorUnknown); LOAD_IN_PROGRESS
#: only waits: the coordinator is the right one, still loading its partition.
COORDINATOR_MOVED = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE})

RETRY_BACKOFF_MAX_MS = 1000  # retry.backoff.max.ms's default (KIP-580)


class ExponentialBackoff:
    """KIP-580's backoff, as the Java client's ExponentialBackoff computes it (base 2, jitter 0.2)."""

    def __init__(self, initial: float, maximum: float, multiplier: float = 2, jitter: float = 0.2):
        self.initial = min(initial, maximum)
        self.maximum = maximum
        self.multiplier = multiplier
        self.jitter = jitter

    def backoff(self, attempts: int) -> float:
        """Seconds to wait before attempt ``attempts + 1`` (``attempts`` failed so far, counting from 0)."""
        if self.maximum <= self.initial:
            return self.initial
        term = self.initial * self.multiplier ** attempts
        factor = random.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter else 1.0
        return min(term * factor, self.maximum)


def default_error_of(response: Any) -> int:
    return int(getattr(response, "error_code", 0))


def first_retriable(codes: Iterable[int]) -> int:
    """The code that decides a request about many things: the first retriable one, else the first error."""
    first_error = 0
    for code in codes:
        if code and is_retriable(code):
            return code
        first_error = first_error or code
    return first_error


class CallPath:
    """``Cluster``'s call path (mixed into it); the cluster provides the primitives it stands on."""

    retry_backoff: float
    retry_backoff_max: float
    request_timeout: float
    controller_id: int

    async def send(self, node_id: int, api_key: ApiKey, build: Callable[[int], Any], *,
                   highest: int | None = None, timeout: float | None = None, transaction_version: int = 1) -> Any:
        raise NotImplementedError

    async def send_any(self, api_key: ApiKey, build: Callable[[int], Any], *, highest: int | None = None,
                       timeout: float | None = None) -> Any:
        raise NotImplementedError

    async def refresh_once(self, topics: list[str] | None, *, allow_auto_create: bool = False) -> Any:
        raise NotImplementedError

    async def find_coordinator_once(self, key_type: int, key: str) -> int:
        raise NotImplementedError

    def forget_coordinator(self, key_type: int, key: str) -> None:
        raise NotImplementedError

    def leader(self, topic: str, partition: int) -> int:
        raise NotImplementedError

    def deadline(self, timeout: float | None = None) -> float:
        """A deadline ``timeout`` seconds from now (request.timeout.ms when None)."""
        return time.monotonic() + (self.request_timeout if timeout is None else timeout)

    def backoff_policy(self, initial: float | None = None) -> ExponentialBackoff:
        return ExponentialBackoff(self.retry_backoff if initial is None else initial, self.retry_backoff_max)

    async def call(self, target: Target, api_key: ApiKey, build: Callable[[int], Any], *,
                   error_of: Callable[[Any], int] = default_error_of, deadline: float | None = None,
                   highest: int | None = None, timeout: float | None = None, transaction_version: int = 1,
                   retry_backoff: float | None = None) -> Any:
        """Send ``build(version)`` to ``target`` until its answer's ``error_of`` is not retriable (the
        answer is returned) or ``deadline`` (monotonic; request.timeout.ms from now when None) passes
        (KafkaTimeoutError with the last cause). ``timeout`` bounds one attempt (request.timeout.ms)."""
        deadline = self.deadline() if deadline is None else deadline
        policy = self.backoff_policy(retry_backoff)
        attempts = 0
        while True:
            try:
                node = await self._resolve(target, deadline)
                attempt_timeout = max(min(timeout or self.request_timeout, deadline - time.monotonic()), 0.001)
                if node is None:
                    response = await self.send_any(api_key, build, highest=highest, timeout=attempt_timeout)
                else:
                    response = await self.send(node, api_key, build, highest=highest, timeout=attempt_timeout,
                                               transaction_version=transaction_version)
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                cause: BaseException = exc
                self._stale(target, None)
            except BrokerResponseError as exc:  # a lookup on the way (FindCoordinator, Metadata) said no
                if not exc.retriable:
                    raise
                cause = exc
                self._stale(target, exc.code)
            else:
                code = error_of(response)
                if not code or not is_retriable(code):
                    return response
                cause = error_instance(code, f"{api_key.name} to {target}", request=api_key)
                self._stale(target, code)
            wait = policy.backoff(attempts)
            attempts += 1
            if time.monotonic() + wait >= deadline:
                raise KafkaTimeoutError(f"{api_key.name} to {target} did not succeed in time "
                                        f"({attempts} attempts)", cause) from cause
            log.debug("%s to %s: %s; attempt %d in %.3fs", api_key.name, target, cause, attempts + 1, wait)
            await asyncio.sleep(wait)

    async def call_leaders(self, partitions: Iterable[TopicPartition], api_key: ApiKey,
                           build: Callable[[int, list[TopicPartition]], Any],
                           answers: Callable[[Any], Iterable[tuple[TopicPartition, int, Any]]], *,
                           deadline: float | None = None, highest: int | None = None) -> dict[TopicPartition, Any]:
        """One request per leader about its partitions; ``answers(response)`` yields (partition, code,
        answer). A partition answered with a retriable code is asked again (of its leader then) after a
        metadata refresh and the backoff; the final answer of each partition is returned, keyed by it."""
        deadline = self.deadline() if deadline is None else deadline
        pending = list(dict.fromkeys(partitions))
        policy = self.backoff_policy()
        found: dict[TopicPartition, Any] = {}
        attempts = 0
        while True:
            cause: BaseException | None = None
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in pending:
                by_leader.setdefault(self.leader(tp.topic, tp.partition), []).append(tp)
            retry: list[TopicPartition] = by_leader.pop(-1, [])
            if retry:
                cause = error_instance(Errors.LEADER_NOT_AVAILABLE, f"{retry[0]}", request=api_key)
            for node, tps in by_leader.items():
                def build_for(version: int, tps: list[TopicPartition] = tps) -> Any:
                    return build(version, tps)
                try:
                    response = await self.send(node, api_key, build_for, highest=highest,
                                               timeout=max(min(self.request_timeout, deadline - time.monotonic()),
                                                           0.001))
                except (KafkaConnectionError, KafkaTimeoutError) as exc:
                    cause = exc
                    retry += tps
                    continue
                for tp, code, answer in answers(response):
                    if code and is_retriable(code):
                        cause = error_instance(code, f"{api_key.name} {tp.topic}-{tp.partition}", request=api_key)
                        retry.append(tp)
                    else:
                        found[tp] = answer
            if not retry:
                return found
            pending = retry
            wait = policy.backoff(attempts)
            attempts += 1
            if time.monotonic() + wait >= deadline:
                raise KafkaTimeoutError(f"{api_key.name} for {sorted(pending)} did not succeed in time", cause) \
                    from cause
            await asyncio.sleep(wait)
            try:
                await self.refresh_once(sorted({tp.topic for tp in pending}))
            except KafkaException as exc:
                log.debug("metadata refresh for %s failed: %s", api_key.name, exc)

    # ------------------------------------------------------------------ plumbing

    async def _resolve(self, target: Target, deadline: float) -> int | None:
        """The node to send to (None: any broker); raises a retriable error when it is not known yet."""
        if isinstance(target, Broker):
            return target.node_id
        if isinstance(target, Coordinator):
            return await self.find_coordinator_once(target.key_type, target.key)
        if isinstance(target, Leader):
            leader = self.leader(target.topic, target.partition)
            if leader < 0:
                await self.refresh_once([target.topic])
                leader = self.leader(target.topic, target.partition)
            if leader < 0:
                raise error_instance(Errors.LEADER_NOT_AVAILABLE, f"{target.topic}-{target.partition}",
                                     request=ApiKey.METADATA)
            return leader
        if isinstance(target, Controller):
            if self.controller_id < 0:
                await self.refresh_once([])
            if self.controller_id < 0:
                raise error_instance(Errors.NOT_CONTROLLER, "no controller known", request=ApiKey.METADATA)
            return self.controller_id
        return None

    def _stale(self, target: Target, code: int | None) -> None:
        """What a failed attempt says about what we know: code None is a connection that failed."""
        if isinstance(target, Coordinator) and (code is None or code in COORDINATOR_MOVED):
            self.forget_coordinator(target.key_type, target.key)
        elif isinstance(target, Leader) and (code is None or code in METADATA_STALE):
            self.forget_leader(target.topic, target.partition)
        elif isinstance(target, Controller) and (code is None or code in METADATA_STALE):
            self.controller_id = -1

    def forget_leader(self, topic: str, partition: int) -> None:
        raise NotImplementedError
