"""COMMIT/ABORT markers: the one path that closes transactions on partitions.

The coordinator completes transactions through it, and so does the
WriteTxnMarkers API (an operator aborting a hanging transaction, as Kafka's
transactions tool does). A marker on a ``__consumer_offsets`` partition also
settles the transaction's pending offsets in the group coordinator.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from weir.protocol.errors import Errors, KafkaError

from ..group.offsets import OFFSETS_TOPIC

log = logging.getLogger(__name__)

#: One node, never re-elected: the coordinator epoch markers carry never changes.
COORDINATOR_EPOCH = 0
#: A write that failed on the disk (KAFKA_STORAGE_ERROR; NOT_COORDINATOR, as the coordinators
#: answer it for their own records) is retried after this backoff, doubled up to the maximum.
RETRY_BACKOFF_S, MAX_RETRY_BACKOFF_S = 0.05, 1.0
_STORAGE_FAILURES = frozenset({Errors.KAFKA_STORAGE_ERROR, Errors.NOT_COORDINATOR})


async def write_markers(context, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                        partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Append a marker to each partition; the error code per partition."""
    results: dict[tuple[str, int], int] = {}
    now_ms = context.clock.now_ms()
    for topic, index in partitions:
        try:
            partition = context.logs.partition(topic, index)
            offset = await partition.append_marker(producer_id, producer_epoch, coordinator_epoch, commit, now_ms)
            await context.logs.maybe_flush(partition)
            if topic == OFFSETS_TOPIC:
                context.offsets.complete_txn(index, producer_id, commit, offset)
            results[(topic, index)] = Errors.NONE
        except KafkaError as exc:
            level = logging.DEBUG if exc.error in _STORAGE_FAILURES else logging.WARNING
            log.log(level, "%s marker for producer %d on %s-%d failed: %s", "COMMIT" if commit else "ABORT",
                    producer_id, topic, index, exc)
            results[(topic, index)] = exc.code
    return results


async def write_markers_until_written(
        context, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
        partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The coordinator's completion: ``write_markers``, retrying each marker that failed on the disk
    until it is written (the disk full or failing, then freed), as Kafka's marker channel manager
    retries its markers; other failures (a partition gone, a producer fenced) are final."""
    results: dict[tuple[str, int], int] = {}
    pending = list(partitions)

    async def attempt() -> None:
        nonlocal pending
        results.update(await write_markers(context, producer_id, producer_epoch, coordinator_epoch, commit, pending))
        pending = [tp for tp in pending if results[tp] in _STORAGE_FAILURES]
        if pending:
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR)

    await until_written(context.clock, attempt)
    return results


async def until_written(clock, operation) -> None:
    """Run ``operation`` until it does not fail on the disk, backing off between attempts."""
    backoff = RETRY_BACKOFF_S
    while True:
        try:
            return await operation()
        except KafkaError as exc:
            if exc.error not in _STORAGE_FAILURES:
                raise
        await clock.sleep(backoff)
        backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
