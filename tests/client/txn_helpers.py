"""Shared by the client's transaction tests: topics, and what a read_committed reader sees
(confluent-kafka, an independent client, so our producer is not checked by our own consumer)."""

from __future__ import annotations

import asyncio
import time

from confluent_kafka import Consumer as CKConsumer, TopicPartition as CKTopicPartition

from tests.support.topics import create_topic


async def new_topic(bootstrap: str, name: str, partitions: int = 1) -> str:
    await asyncio.to_thread(create_topic, bootstrap, name, partitions)
    return name


def _read(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[bytes]:
    reader = CKConsumer({"bootstrap.servers": bootstrap, "group.id": "txn-test-reader", "enable.auto.commit": False,
                         "isolation.level": isolation})
    try:
        ends = {p: reader.get_watermark_offsets(CKTopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
        reader.assign([CKTopicPartition(topic, p, 0) for p in range(partitions)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            positions = reader.position([CKTopicPartition(topic, p) for p in range(partitions)])
            if all(tp.offset >= ends[tp.partition] for tp in positions):
                break
            for message in reader.consume(500, timeout=0.2):
                if not message.error():
                    got.append(message.value())
        return got
    finally:
        reader.close()


async def read_committed(bootstrap: str, topic: str, partitions: int = 1) -> list[bytes]:
    """Every record a read_committed consumer returns, up to the last stable offset."""
    return await asyncio.to_thread(_read, bootstrap, topic, partitions, "read_committed")


def _stable(bootstrap: str, topic: str, partitions: int) -> bool:
    readers = [CKConsumer({"bootstrap.servers": bootstrap, "group.id": "txn-test-lso", "isolation.level": isolation})
               for isolation in ("read_uncommitted", "read_committed")]
    try:
        for p in range(partitions):
            high, stable = (r.get_watermark_offsets(CKTopicPartition(topic, p), timeout=10, cached=False)[1]
                            for r in readers)
            if high != stable:
                return False
        return True
    finally:
        for reader in readers:
            reader.close()


async def wait_until_no_open_transaction(bootstrap: str, topic: str, partitions: int = 1,
                                         timeout: float = 30.0) -> None:
    """Until the last stable offset reaches the high watermark: the open transaction ended."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(_stable, bootstrap, topic, partitions):
        assert time.monotonic() < deadline, "the open transaction did not end"
        await asyncio.sleep(0.2)


async def until(condition, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} not reached"
        await asyncio.sleep(0.05)
