"""An internal topic a coordinator keeps its state in, and the replay of it.

A coordinator writes every state change as a record here first and changes its
memory only by replaying that record, so start-up (replay of everything) and a
live change are one code path. Records travel in ordinary uncompressed v2
batches; transactional offset commits carry the producer's id and epoch and
are closed by the same COMMIT/ABORT markers as data partitions.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from collections.abc import Iterator

from weir.broker.log.manager import LogManager
from weir.broker.log.partition import Partition
from weir.protocol import records as rec
from weir.protocol.errors import Errors, KafkaError

from . import snapshot

log = logging.getLogger(__name__)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed int32."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@functools.lru_cache(maxsize=65536)
def partition_for(key: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode()) % n``; abs(INT_MIN) is 0 there."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


@dataclass(slots=True)
class LogEntry:
    """One replayed item: a data record, or a transaction marker (``record`` None)."""
    partition: int
    offset: int
    header: rec.BatchHeader
    key: bytes | None = None
    value: bytes | None = None
    marker_commit: bool | None = None


#: The broker setting that gives each internal topic its segment.bytes, as in Kafka.
SEGMENT_BYTES_SETTING = {"__consumer_offsets": "offsets.topic.segment.bytes",
                         "__transaction_state": "transaction.state.log.segment.bytes",
                         "__share_group_state": "share.coordinator.state.topic.segment.bytes"}


class CoordinatorLog:
    def __init__(self, logs: LogManager, topic: str, num_partitions: int):
        self.logs = logs
        self.topic = topic
        self.num_partitions = num_partitions
        # Compacted, as Kafka creates its internal topics: the log cleaner keeps the latest
        # record per key, so start-up replays the live state (transactional ids, groups,
        # offsets), not the history.
        self.configs = {"cleanup.policy": "compact", "segment.bytes": logs.config[SEGMENT_BYTES_SETTING[topic]]}

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.num_partitions)

    def partition(self, index: int) -> Partition:
        topic = self.logs.topics.get(self.topic)
        if topic is None:
            topic = self.logs.create_topic(self.topic, self.num_partitions, dict(self.configs))
            for partition in topic.partitions:  # empty: an empty view is their state
                partition.observer = snapshot.SnapshotKeeper(partition, snapshot.PartitionView())
        return topic.partitions[index]

    async def append(self, index: int, records: list[tuple[bytes, bytes | None]], now_ms: int, *,
                     producer_id: int = rec.NO_PRODUCER_ID, producer_epoch: int = rec.NO_PRODUCER_EPOCH,
                     transactional: bool = False, verify_txn=None) -> int:
        """Append one batch of (key, value) records; its base offset."""
        batch = rec.encode_batch([rec.Record(value=value, key=key, timestamp=now_ms) for key, value in records],
                                 producer_id=producer_id, producer_epoch=producer_epoch,
                                 transactional=transactional)
        try:
            partition = self.partition(index)
            result = await partition.append_coordinator_batch(memoryview(batch), rec.read_header(batch), verify_txn)
            await self.logs.maybe_flush(partition)
        except KafkaError as exc:
            if exc.error == Errors.KAFKA_STORAGE_ERROR:
                # Kafka's coordinators answer a failed append of theirs so (TransactionStateManager,
                # GroupMetadataManager): the client finds the coordinator again and retries.
                raise KafkaError(Errors.NOT_COORDINATOR, exc.message) from None
            raise
        return result.base_offset

    def replay(self) -> Iterator[LogEntry]:
        """The topic's state as entries, partition by partition, in offset order: a partition's
        newest coordinator snapshot, then its log from the snapshot's offset (snapshot.py). Each
        partition's view is rebuilt on the way and follows its appends from then on."""
        topic = self.logs.topics.get(self.topic)
        if topic is None:
            return
        for partition in topic.partitions:
            found = snapshot.load(partition.directory, partition.log_start_offset, partition.log_end_offset)
            start, view = found if found is not None else (0, snapshot.PartitionView())
            for kept in view.entries():
                yield LogEntry(partition.index, kept.offset, _header_of(kept), kept.key, kept.value)
            for segment in partition.segments_from(start):
                position = segment.offset_index.floor(start) or 0 if start > segment.base_offset else 0
                for _position, header, batch in segment.batches(position):
                    if header.base_offset < start:
                        continue  # in the snapshot (a snapshot's offset is a batch boundary)
                    if header.is_control:
                        if not header.records_count:
                            continue  # a marker the cleaner emptied: nothing of its transaction is left
                        kind, _coordinator_epoch = rec.read_control_batch(batch)
                        view.marker(header.producer_id, kind == rec.CONTROL_COMMIT)
                        yield LogEntry(partition.index, header.base_offset, header,
                                       marker_commit=kind == rec.CONTROL_COMMIT)
                        continue
                    header, records = rec.decode_batch(batch, verify_crc=False)  # checked at recovery
                    producer_id = header.producer_id if header.is_transactional else -1
                    for record in records:
                        view.record(record.offset, record.key, record.value, producer_id)
                        yield LogEntry(partition.index, record.offset, header, record.key, record.value)
            partition.observer = snapshot.SnapshotKeeper(partition, view)


def _header_of(kept: snapshot.Kept) -> rec.BatchHeader:
    """The header fields replay reads of a record from a snapshot: its offset and producer."""
    transactional = kept.producer_id >= 0
    return rec.BatchHeader(kept.offset, 0, 0, rec.MAGIC, 0, rec.TRANSACTIONAL_FLAG if transactional else 0, 0,
                           -1, -1, kept.producer_id, -1, -1, 1)
