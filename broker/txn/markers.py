"""COMMIT/ABORT markers: the one path that closes transactions on partitions.

The coordinator completes transactions through it, and so does the
WriteTxnMarkers API (an operator aborting a hanging transaction, as Kafka's
transactions tool does). A marker on a ``__consumer_offsets`` partition also
settles the transaction's pending offsets in the group coordinator.
"""

from __future__ import annotations

import logging
from typing import Iterable

from weir.protocol.errors import Errors, KafkaError

from ..group.offsets import OFFSETS_TOPIC

log = logging.getLogger(__name__)

#: One node, never re-elected: the coordinator epoch markers carry never changes.
COORDINATOR_EPOCH = 0


async def write_markers(context, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                        partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Append a marker to each partition; the error code per partition."""
    results = {}
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
            log.warning("%s marker for producer %d on %s-%d failed: %s", "COMMIT" if commit else "ABORT",
                        producer_id, topic, index, exc)
            results[(topic, index)] = exc.code
    return results
