"""A partition's transactions: opening one, closing it with its marker, and the aborted ones a
read_committed fetch must name.

A producer's first transactional batch opens a transaction here (``check_start``: the
coordinator must confirm it, KIP-890 part 1); the earliest open one holds the last stable
offset (LSO) back, and its COMMIT/ABORT marker (written only by ``Partition.append_marker``,
replayed by ``producer_replay``) releases it (``complete``). Aborted transactions go to the
segment's ``.txnindex`` (``txn_index``) so read_committed fetches can name them
(``aborted_between``). Which transactions are open is the producer state's
(``ProducerStateManager.ongoing``); the aborts are each segment's transaction index's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from weir.protocol import records as rec
from weir.protocol.errors import Errors, KafkaError

from .producer_state import ProducerStateManager
from .txn_index import AbortedTxn

if TYPE_CHECKING:
    from .partition import Partition
    from .segment import Segment

TxnVerifier = Callable[[rec.BatchHeader], None]


def check_start(producers: ProducerStateManager, header: rec.BatchHeader, verify_txn: TxnVerifier | None) -> None:
    """A transactional batch that opens a transaction here needs the coordinator's yes."""
    if producers.has_open_txn(header.producer_id, header.producer_epoch):
        return
    if verify_txn is None or header.producer_id < 0:
        raise KafkaError(Errors.INVALID_TXN_STATE, "transactional batch outside a transaction")
    verify_txn(header)


def complete(partition: Partition, segment: Segment, marker: rec.BatchHeader, coordinator_epoch: int,
             commit: bool) -> None:
    """Apply a marker written to ``segment``: close the producer's transaction, and index it if aborted."""
    producers = partition.producers
    first = producers.record_marker(marker.producer_id, marker.producer_epoch, coordinator_epoch,
                                    marker.max_timestamp)
    if first is None or commit:
        return
    first_unstable = producers.first_unstable_offset()
    if not segment.txn_index.entries:
        partition.directory_unsynced = True  # its .txnindex file is created by this abort
    segment.txn_index.append(AbortedTxn(marker.producer_id, first, marker.base_offset,
                                        marker.base_offset + 1 if first_unstable is None else first_unstable))


def aborted_between(partition: Partition, start: int, end: int) -> list[AbortedTxn]:
    """Aborted transactions overlapping offsets [start, end), as Kafka's
    ``collectAbortedTxns`` finds them: stop at the first whose LSO reaches ``end``."""
    found = []
    for segment in partition.segments_from(start):
        for entry in segment.txn_index.entries:
            if entry.last_offset < start:
                continue
            if entry.first_offset < end:
                found.append(entry)
            if entry.last_stable_offset >= end:
                return found
    return found
