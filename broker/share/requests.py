"""What ShareFetch and ShareAcknowledge share: the session step and the acknowledgements.

Acknowledgement batches are checked before any is applied to a share-partition: first <= last,
one acknowledge type or one per offset, types known, RENEW only in a renew request; a partition
that fails answers INVALID_REQUEST in its acknowledge error. Overlapping batches are not refused
here: as on Kafka 4.4, the second finds the offset acknowledged (INVALID_RECORD_STATE). A
share-partition applies a partition's batches all or none (``SharePartition.acknowledge``). A
group whose ``share.renew.acknowledge.enable`` is false refuses a partition's batches holding a
RENEW with INVALID_RECORD_STATE, as Kafka 4.4 does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from weir.protocol.errors import Errors, KafkaError

from .manager import SharePartitionManager
from .in_flight import Change
from .partition import SharePartition
from .record_state import AcknowledgeType
from .sessions import FINAL_EPOCH, INITIAL_EPOCH, Key, ShareSession

Batches = list[tuple[int, int, list[int]]]
RENEW_DISABLED = "Renewing acquisition locks is not enabled for the group."  # Kafka 4.4's words


def check_batches(batches: Iterable[Any], renew_allowed: bool) -> Batches:
    checked: Batches = []
    for batch in batches:
        first, last, types = batch.first_offset, batch.last_offset, list(batch.acknowledge_types)
        if first > last or first < 0:
            raise KafkaError(Errors.INVALID_REQUEST)  # first after last: Kafka 4.4 answers without a message
        if len(types) not in (1, last - first + 1):
            raise KafkaError(Errors.INVALID_REQUEST)  # not one type, nor one per offset
        for kind in types:
            if kind not in AcknowledgeType._value2member_map_:
                raise KafkaError(Errors.INVALID_REQUEST)  # an unknown type
            if kind == AcknowledgeType.RENEW and not renew_allowed:
                raise KafkaError(Errors.INVALID_REQUEST)  # RENEW outside a renew acknowledgement
        checked.append((first, last, types))
    return checked


def step_session(manager: SharePartitionManager, group_id: str, member_id: str, epoch: int,
                 connection: Any = None) -> ShareSession:
    """Open (epoch 0) or continue a share session. A session the member opens again replaces its
    old one; the records it holds stay its own until acknowledged or their locks expire (librdkafka
    opens a new session while holding records, after a fetch error). ``connection`` (the
    connection's security session) ends the share session when it closes."""
    if epoch != INITIAL_EPOCH:
        return manager.sessions.next(group_id, member_id, epoch)
    session = manager.sessions.open(group_id, member_id)
    if connection is not None:
        session.connection = connection
        connection.on_close[("share-session", group_id, member_id)] = (
            lambda: manager.connection_closed(group_id, member_id, connection))
    return session


async def acknowledge(manager: SharePartitionManager, group_id: str, member_id: str, topics: Iterable[Any],
                      renew_allowed: bool) -> dict[Key, KafkaError | None]:
    """Each partition's acknowledgements applied and stored; its error (None: applied and stored).
    A failed write undoes them and answers Kafka's error (``SharePartitionManager.store``): the
    records stay with the member, which may acknowledge them again, until their lock expires."""
    return await store(manager, apply(manager, group_id, member_id, topics, renew_allowed))


@dataclass
class Applied:
    """Acknowledgements applied in memory: each partition's error so far, and the changes whose
    state writes are still to be done (``store``)."""
    results: dict[Key, KafkaError | None]
    changed: dict[Key, tuple[SharePartition, Change]]


def apply(manager: SharePartitionManager, group_id: str, member_id: str, topics: Iterable[Any],
          renew_allowed: bool) -> Applied:
    """Check and apply each partition's acknowledgements in memory; their records stay pending (not
    acquirable, the start offset not past them) until ``store`` has written them."""
    limits = manager.limits(group_id)
    renew_enabled = manager.group_configs.value(group_id, "share.renew.acknowledge.enable")
    applied = Applied({}, {})
    for topic in topics:
        for partition in topic.partitions:
            key = (topic.topic_id, partition.partition_index)
            if not partition.acknowledgement_batches:
                continue
            try:
                batches = check_batches(partition.acknowledgement_batches, renew_allowed)
                if not renew_enabled and any(AcknowledgeType.RENEW in types for _, _, types in batches):
                    raise KafkaError(Errors.INVALID_RECORD_STATE, RENEW_DISABLED)  # nothing applied, as Kafka
                share_partition = manager.get(group_id, topic.topic_id, partition.partition_index)
                change = share_partition.acknowledge(member_id, batches, limits)
                applied.results[key] = None
                if change is not None:
                    applied.changed[key] = share_partition, change
            except KafkaError as exc:
                applied.results[key] = exc
    return applied


async def store(manager: SharePartitionManager, applied: Applied) -> dict[Key, KafkaError | None]:
    """Write the applied changes; each partition's error (None: applied and stored)."""
    results = dict(applied.results)
    written = await asyncio.gather(*(manager.store(sp, change) for sp, change in applied.changed.values()),
                                   return_exceptions=True)
    for key, outcome in zip(applied.changed, written, strict=True):
        if isinstance(outcome, KafkaError):
            results[key] = outcome
        elif isinstance(outcome, BaseException):
            results[key] = KafkaError(Errors.UNKNOWN_SERVER_ERROR, str(outcome))
    return results


def end_session(manager: SharePartitionManager, group_id: str, member_id: str, epoch: int) -> None:
    """The final epoch closes the session; what the member still holds goes back."""
    if epoch == FINAL_EPOCH:
        manager.sessions.close(group_id, member_id)
        manager.release_member(group_id, member_id)


def has_acknowledgements(topics: Iterable[Any]) -> bool:
    return any(p.acknowledgement_batches for t in topics for p in t.partitions)
