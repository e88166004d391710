"""An asyncio share group member (KIP-932): ``async for record in consumer``, ``acknowledge``,
``commit``, as Kafka's ``KafkaShareConsumer`` works.

One task heartbeats (ShareGroupHeartbeat at the interval the broker answers with); the broker
assigns partitions. Records come from ShareFetch in a share session per broker (its connection);
each record is acquired under the broker's lock and must be acknowledged: ``acknowledge(record,
"accept" | "release" | "reject" | "renew")``, sent with the next fetch or by ``commit()``. In the
default implicit mode, records handed out and not acknowledged are accepted when the next records
are fetched (or at ``commit()`` / ``close()``), as the Java client's implicit mode does.

Simplifications: one share session per broker connection, opened again (epoch 0) after a
SHARE_SESSION_NOT_FOUND or INVALID_SHARE_SESSION_EPOCH; heartbeats re-join at epoch 0 after
UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH; other errors raise from the iteration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any

from weir.protocol import records as rec
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import share_acknowledge as sa
from weir.protocol.messages import share_fetch as sf
from weir.protocol.messages import share_group_heartbeat as sgh

from ..calls import Coordinator
from ..cluster import GROUP, Cluster
from ..errors import error_instance

log = logging.getLogger(__name__)

KINDS = {"accept": 1, "release": 2, "reject": 3, "renew": 4}
JOIN, LEAVE = 0, -1


@dataclass(frozen=True, slots=True)
class ShareRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    delivery_count: int


class ShareConsumer:
    def __init__(self, *topics: str, bootstrap_servers: str, group_id: str, client_id: str = "weir-python",
                 acknowledgement_mode: str = "implicit", max_records: int = 500, max_wait_ms: int = 500):
        if acknowledgement_mode not in ("implicit", "explicit"):
            raise ValueError("acknowledgement_mode is implicit or explicit")
        self.topics, self.group_id = list(topics), group_id
        self.implicit = acknowledgement_mode == "implicit"
        self.max_records, self.max_wait_ms = max_records, max_wait_ms
        self.cluster = Cluster(bootstrap_servers, client_id=client_id)
        self.member_id = uuid.uuid4().hex
        self.member_epoch = JOIN
        self.assignment: dict[bytes, list[int]] = {}  # topic id -> partitions
        self._names: dict[bytes, str] = {}
        self._assigned = asyncio.Event()
        self._session_epochs: dict[int, int] = {}  # broker -> next share session epoch
        self._buffer: deque[ShareRecord] = deque()
        self._handed: dict[tuple[str, int, int], None] = {}  # delivered, not acknowledged yet
        self._pending: dict[tuple[str, int], dict[int, int]] = {}  # (topic, partition) -> offset -> type
        self._heartbeat: asyncio.Task[None] | None = None
        self._closed = False

    # ------------------------------------------------------------------ life

    async def __aenter__(self) -> ShareConsumer:
        await self.cluster.refresh(self.topics)
        self._heartbeat = asyncio.get_running_loop().create_task(self._heartbeat_loop())
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def close(self) -> None:
        """Acknowledge what is pending (implicit mode: accept what was handed out), end the share
        sessions and leave the group."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._accept_handed()
            for node in list(self._session_epochs):
                await self._acknowledge(node, final=True)
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._heartbeat
        with contextlib.suppress(Exception):
            await self._beat(LEAVE)
        await self.cluster.close()

    # ------------------------------------------------------------------ records

    def __aiter__(self) -> ShareConsumer:
        return self

    async def __anext__(self) -> ShareRecord:
        while not self._buffer:
            if self._closed:
                raise StopAsyncIteration
            await self._fetch()
        if self._closed:  # closed while fetching: what came back goes back to the group with the session
            raise StopAsyncIteration
        record = self._buffer.popleft()
        self._handed[(record.topic, record.partition, record.offset)] = None
        return record

    def acknowledge(self, record: ShareRecord, kind: str = "accept") -> None:
        """How the broker should treat ``record``: sent with the next fetch, or by ``commit()``."""
        key = (record.topic, record.partition, record.offset)
        if key not in self._handed:
            raise ValueError(f"{key} is not a record this consumer holds unacknowledged")
        if kind != "renew":
            del self._handed[key]
        self._pending.setdefault((record.topic, record.partition), {})[record.offset] = KINDS[kind]

    async def commit(self) -> None:
        """Send the pending acknowledgements (implicit mode: first accept what was handed out)."""
        self._accept_handed()
        for node in list(self._session_epochs):
            await self._acknowledge(node)

    # ------------------------------------------------------------------ the group

    async def _heartbeat_loop(self) -> None:
        while True:
            interval = await self._beat(self.member_epoch)
            await asyncio.sleep(interval / 1000)

    async def _beat(self, epoch: int) -> int:
        joining = epoch == JOIN
        answer = await self.cluster.call(Coordinator(GROUP, self.group_id), ApiKey.SHARE_GROUP_HEARTBEAT, lambda v: (
            sgh.REQUEST(group_id=self.group_id, member_id=self.member_id, member_epoch=epoch,
                        subscribed_topic_names=self.topics if joining else None)))
        if answer.error_code in (Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_MEMBER_EPOCH) and epoch != LEAVE:
            self.member_epoch = JOIN  # fenced: join again with the same member id
            return 0
        if answer.error_code:
            raise error_instance(answer.error_code, answer.error_message or "ShareGroupHeartbeat")
        self.member_epoch = answer.member_epoch
        if answer.assignment is not None:
            self.assignment = {tp.topic_id: list(tp.partitions) for tp in answer.assignment.topic_partitions}
            self._assigned.set()
        return int(answer.heartbeat_interval_ms)

    # ------------------------------------------------------------------ fetching

    async def _fetch(self) -> None:
        await self._assigned.wait()
        self._accept_handed()
        await self.cluster.refresh(self.topics)
        self._names = {info.topic_id: info.name for info in self.cluster.topics.values()}
        by_node: dict[int, list[tuple[bytes, int]]] = {}
        for topic_id, indexes in self.assignment.items():
            name = self._names.get(topic_id)
            if name is None:
                continue
            for index in indexes:
                by_node.setdefault(self.cluster.leader(name, index), []).append((topic_id, index))
        if not by_node:
            await asyncio.sleep(self.max_wait_ms / 1000)  # assigned nothing yet: wait for the next heartbeat
            return
        for node, wanted in by_node.items():
            await self._fetch_from(node, wanted)

    async def _fetch_from(self, node: int, partitions: list[tuple[bytes, int]]) -> None:
        epoch = self._session_epochs.get(node, 0)
        acks = self._take_pending() if epoch else {}
        wanted: dict[bytes, list[int]] = {}
        for topic_id, partition in partitions:
            wanted.setdefault(topic_id, []).append(partition)

        def build(version: int) -> Any:
            return sf.REQUEST(group_id=self.group_id, member_id=self.member_id, share_session_epoch=epoch,
                              max_wait_ms=self.max_wait_ms, min_bytes=1, max_records=self.max_records,
                              batch_size=self.max_records, topics=[sf.FetchTopic(topic_id=topic_id, partitions=[
                                  sf.FetchPartition(partition_index=p, acknowledgement_batches=_batches(
                                      acks.get((self._names[topic_id], p), {}))) for p in indexes])
                                  for topic_id, indexes in wanted.items()], forgotten_topics_data=[])
        answer = await self.cluster.send(node, ApiKey.SHARE_FETCH, build)
        if answer.error_code in (Errors.SHARE_SESSION_NOT_FOUND, Errors.INVALID_SHARE_SESSION_EPOCH):
            self._session_epochs[node] = 0  # open a new session; the acknowledgements are sent again
            self._restore_pending(acks)
            return
        if answer.error_code:
            raise error_instance(answer.error_code, answer.error_message or "ShareFetch")
        self._session_epochs[node] = epoch + 1
        for topic in answer.responses:
            for partition in topic.partitions:
                self._take_records(self._names.get(topic.topic_id, ""), partition)

    def _take_records(self, topic: str, partition: Any) -> None:
        counts: dict[int, int] = {}
        for acquired in partition.acquired_records:
            counts.update(dict.fromkeys(range(acquired.first_offset, acquired.last_offset + 1),
                                        acquired.delivery_count))
        if not counts or not partition.records:
            return
        for header, records in rec.decode_batches(bytes(partition.records)):
            if header.is_control:
                continue
            for record in records:
                if record.offset in counts:
                    self._buffer.append(ShareRecord(topic, partition.partition_index, record.offset, record.key,
                                                    record.value, record.timestamp, counts[record.offset]))

    # ------------------------------------------------------------------ acknowledgements

    def _accept_handed(self) -> None:
        if self.implicit:
            for topic, partition, offset in self._handed:
                self._pending.setdefault((topic, partition), {}).setdefault(offset, KINDS["accept"])
            self._handed.clear()

    def _take_pending(self) -> dict[tuple[str, int], dict[int, int]]:
        pending, self._pending = self._pending, {}
        return pending

    def _restore_pending(self, acks: dict[tuple[str, int], dict[int, int]]) -> None:
        for key, offsets in acks.items():
            self._pending.setdefault(key, {}).update(offsets)

    async def _acknowledge(self, node: int, *, final: bool = False) -> None:
        acks = self._take_pending()
        epoch = self._session_epochs.get(node, 0)
        if not epoch or (not acks and not final):
            self._restore_pending(acks)
            return
        ids = {name: topic_id for topic_id, name in self._names.items()}
        by_topic: dict[str, list[int]] = {}
        for topic, partition in acks:
            by_topic.setdefault(topic, []).append(partition)
        answer = await self.cluster.send(node, ApiKey.SHARE_ACKNOWLEDGE, lambda v: sa.REQUEST(
            group_id=self.group_id, member_id=self.member_id, share_session_epoch=-1 if final else epoch,
            topics=[sa.AcknowledgeTopic(topic_id=ids[topic], partitions=[
                sa.AcknowledgePartition(partition_index=p, acknowledgement_batches=_batches(acks[(topic, p)]))
                for p in partitions]) for topic, partitions in by_topic.items()]))
        if final:
            self._session_epochs.pop(node, None)
        elif answer.error_code == 0:
            self._session_epochs[node] = epoch + 1
        if answer.error_code:
            raise error_instance(answer.error_code, answer.error_message or "ShareAcknowledge")
        for topic in answer.responses:
            for partition in topic.partitions:
                if partition.error_code:
                    raise error_instance(partition.error_code, partition.error_message or "ShareAcknowledge")


def _batches(offsets: dict[int, int]) -> list[Any]:
    """Acknowledgement batches: runs of consecutive offsets with one type each."""
    batches: list[Any] = []
    for offset in sorted(offsets):
        kind = offsets[offset]
        last = batches[-1] if batches else None
        if last is not None and last.last_offset == offset - 1 and last.acknowledge_types == [kind]:
            last.last_offset = offset
        else:
            batches.append(sf.AcknowledgementBatch(first_offset=offset, last_offset=offset, acknowledge_types=[kind]))
    return batches
