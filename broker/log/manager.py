"""All topics and partitions under the data directory, and the background jobs on them.

Layout: ``<data-dir>/<topic>-<partition>/`` per partition, each with a
``partition.metadata`` JSON file holding the topic id and the topic's config
overrides (Kafka keeps the id there too; it keeps configs in its metadata log,
which one process does not need).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiofiles.os

from broker.clock import Clock
from broker.config import BrokerConfig
from protocol.errors import Errors, KafkaError

from .cleaner import LogCleaner
from .partition import Partition

log = logging.getLogger(__name__)

_fsync_in_thread = aiofiles.os.wrap(lambda segment: segment.fsync())  # fsync off the event loop

METADATA_FILE = "partition.metadata"
MAX_TOPIC_NAME = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def validate_topic_name(name: str | None) -> None:
    if not name:
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION, "Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME:
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION,
                         f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters")
    if not _LEGAL_TOPIC.match(name):
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION,
                         f"Topic name \"{name}\" is illegal, it contains a character other than "
                         "ASCII alphanumerics, '.', '_' and '-'")


@dataclass
class Topic:
    name: str
    topic_id: bytes
    overrides: dict[str, Any]
    partitions: list[Partition] = field(default_factory=list)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class LogManager:
    def __init__(self, data_dir: Path, config: BrokerConfig, clock: Clock):
        self.data_dir = Path(data_dir)
        self.config = config
        self.clock = clock
        self.topics: dict[str, Topic] = {}
        self._tasks: list[asyncio.Task] = []
        self.cleaner = LogCleaner(self.data_dir, config, clock, self.all_partitions)

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        found: dict[str, list[tuple[int, Path, dict]]] = {}
        for directory in sorted(self.data_dir.iterdir()):
            match = _PARTITION_DIR.match(directory.name)
            meta_path = directory / METADATA_FILE
            if not (directory.is_dir() and match and meta_path.exists()):
                continue
            meta = json.loads(meta_path.read_text())
            found.setdefault(match.group(1), []).append((int(match.group(2)), directory, meta))
        for name, parts in found.items():
            parts.sort(key=lambda item: item[0])
            meta = parts[0][2]
            topic = Topic(name, bytes.fromhex(meta["topic_id"]), meta.get("configs", {}))
            for index, directory, _meta in parts:
                partition = Partition(name, index, directory, self.topic_config(topic.overrides))
                partition.open()
                topic.partitions.append(partition)
            self.topics[name] = topic
        log.info("loaded %d topic(s), %d partition(s) from %s", len(self.topics),
                 sum(len(t.partitions) for t in self.topics.values()), self.data_dir)

    def start_background_jobs(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._retention_loop()))
        self._tasks.append(loop.create_task(self._flush_loop()))  # flush.ms may be set per topic
        if self.config["log.cleaner.enable"]:
            self._tasks.append(loop.create_task(self.cleaner.run()))

    async def close(self) -> None:
        await self.cleaner.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for topic in self.topics.values():
            for partition in topic.partitions:
                await partition.quiesce()
                partition.close()

    # ------------------------------------------------------------------ topics

    def topic_config(self, overrides: dict[str, Any]) -> dict[str, Any]:
        config = self.config.topic_defaults()
        config.update(overrides)
        return config

    def create_topic(self, name: str, num_partitions: int, overrides: dict[str, Any] | None = None) -> Topic:
        validate_topic_name(name)
        if name in self.topics:
            raise KafkaError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        overrides = dict(overrides or {})
        topic = Topic(name, uuid.uuid4().bytes, overrides)
        meta = json.dumps({"version": 0, "topic_id": topic.topic_id.hex(), "configs": overrides})
        for index in range(num_partitions):
            directory = self.data_dir / f"{name}-{index}"
            directory.mkdir(parents=True, exist_ok=True)
            (directory / METADATA_FILE).write_text(meta)
            partition = Partition(name, index, directory, self.topic_config(overrides))
            partition.open()
            topic.partitions.append(partition)
        self.topics[name] = topic
        log.info("created topic %s with %d partition(s)", name, num_partitions)
        return topic

    async def delete_topic(self, name: str) -> None:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        for partition in topic.partitions:
            await self.cleaner.forget(partition)  # a cleaning pass may be reading it
            await partition.quiesce()  # a worker-thread write may still hold the file
            partition.close()
            shutil.rmtree(partition.directory, ignore_errors=True)
        log.info("deleted topic %s", name)

    def get_or_create(self, name: str, *, allow_create: bool) -> Topic:
        topic = self.topics.get(name)
        if topic is not None:
            return topic
        validate_topic_name(name)
        if not (allow_create and self.config["auto.create.topics.enable"]):
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        return self.create_topic(name, self.config["num.partitions"])

    def partition(self, topic: str, index: int) -> Partition:
        found = self.topics.get(topic)
        if found is None or not 0 <= index < len(found.partitions):
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        return found.partitions[index]

    def all_partitions(self):
        for topic in self.topics.values():
            yield from topic.partitions

    # ------------------------------------------------------------------ background jobs

    async def maybe_flush(self, partition: Partition) -> None:
        """Message-count flush policy (log.flush.interval.messages / flush.messages)."""
        if partition.unflushed_messages >= partition.config["flush.messages"]:
            await self._fsync(partition.take_unflushed(self.clock.now_ms()))

    async def _flush_loop(self) -> None:
        """Time-based flush policy: fsync a partition whose last flush is older than its
        flush.ms (log.flush.interval.ms by default), checked every log.flush.scheduler.interval.ms."""
        interval = self.config["log.flush.scheduler.interval.ms"] / 1000
        while True:
            await self.clock.sleep(interval)
            now = self.clock.now_ms()
            for partition in list(self.all_partitions()):
                flush_ms = partition.config["flush.ms"]
                if flush_ms is not None and now - partition.last_flush_ms >= flush_ms:
                    await self._fsync(partition.take_unflushed(now))

    @staticmethod
    async def _fsync(segments) -> None:
        for segment in segments:
            await _fsync_in_thread(segment)

    async def _retention_loop(self) -> None:
        interval = self.config["log.retention.check.interval.ms"] / 1000
        while True:
            await self.clock.sleep(interval)
            self.run_retention()

    def run_retention(self) -> int:
        now = self.clock.now_ms()
        deleted = 0
        expiration = self.config["producer.id.expiration.ms"]
        for partition in list(self.all_partitions()):
            deleted += partition.apply_retention(now)
            partition.producers.expire(now, expiration)
        return deleted
