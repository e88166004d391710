"""All topics and partitions under the data directory, and the background jobs on them.

Layout: ``<data-dir>/<topic>-<partition>/`` per partition, each with a
``partition.metadata`` JSON file holding the topic id and the topic's config
overrides (Kafka keeps the id there too; it keeps configs in its metadata log,
which one process does not need), and one record per topic that commits its
creation (topic_records.py).

Creating a topic or adding partitions is all-or-nothing: refused up front with
Kafka's answers when it cannot be served (at most 10,000 partitions per
request, ``max.broker.partitions`` per broker), and on a failure midway every
directory made is removed before answering. Segment files share one budget of
open descriptors (``weir.max.open.segment.files``, open_files.py).
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from weir.broker.clock import Clock
from weir.broker.config import BrokerConfig
from weir.protocol.errors import Errors, KafkaError

from . import log_start
from .cleaner import LogCleaner
from .group_commit import GroupCommit
from . import disk, producer_checkpoint, restart_points, restart_writer
from .open_files import SegmentFiles, default_open_files_limit
from .partition import Partition
from .topic_records import (TopicRecord, TopicRecords, partition_dir, partition_dirs, remove_new_partition_dir,
                            remove_stray_partition_dir, write_partition_metadata)

log = logging.getLogger(__name__)

MAX_TOPIC_NAME = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
# Kafka's controller (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH) refuses a CreateTopics
# request whose topics add up to more partitions than this, and bounds a CreatePartitions request
# by the same number of partition records (QuorumController.MAX_RECORDS_PER_USER_OP).
MAX_PARTITIONS_PER_REQUEST = 10_000
EXCESSIVE_PARTITIONS = "Excessively large number of partitions per request."
# Unset max.broker.partitions: as many partitions as can all keep their active segment open
# within weir.max.open.segment.files, but never fewer than this (room for the two internal
# topics and user topics on a host with a low open files limit; beyond the open-file budget a
# segment is reopened on use, which costs time, not descriptors).
MIN_DEFAULT_BROKER_PARTITIONS = 1000


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
        self.files = SegmentFiles(config["weir.max.open.segment.files"] or default_open_files_limit())
        self.disk = disk.register(self.data_dir)  # its health: disk.py
        self.records = TopicRecords(self.data_dir)
        self.cleaner = LogCleaner(self.data_dir, config, clock, self.all_partitions)
        self.group_commit = GroupCommit()
        self._page_cache_trusted = False
        # producer-state-checkpoint as loaded: entries a clean shutdown carries over (producer_checkpoint.py)
        self._producer_checkpoint: dict[producer_checkpoint.Key, producer_checkpoint.Entry] = {}

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        """Load every committed topic; remove partition directories no topic record accounts for."""
        if not self.data_dir.is_dir():
            self.data_dir.mkdir(parents=True)
            disk.fsync_directory(self.data_dir.parent)  # its name survives a power loss (as Kafka flushes it)
        boot_id = restart_points.boot_id()
        self._page_cache_trusted = restart_points.verified_in_boot(self.data_dir, boot_id)
        records = self.records.load()
        self._producer_checkpoint = producer_checkpoint.load(self.data_dir)
        found = partition_dirs(self.data_dir)
        for name in sorted(records):
            record = records[name]
            directories = found.pop(name, {})
            topic = Topic(name, record.topic_id, record.configs)
            for index in range(record.partitions):
                directory = directories.pop(index, None)
                if directory is None:
                    directory = partition_dir(self.data_dir, name, index)
                    log.warning("partition directory %s of topic %s is missing; starting it empty", directory, name)
                    directory.mkdir(parents=True, exist_ok=True)
                    write_partition_metadata(directory, record.topic_id, record.configs)
                topic.partitions.append(self._open_partition(name, index, directory, record.configs,
                                                             self._producer_checkpoint.get((record.topic_id, index))))
            self.topics[name] = topic
            for _index, directory in sorted(directories.items()):
                remove_stray_partition_dir(directory, f"topic {name} has {record.partitions} partition(s); "
                                                      "left by an interrupted partition addition")
        for name, directories in sorted(found.items()):
            for _index, directory in sorted(directories.items()):
                remove_stray_partition_dir(directory, f"no topic {name} was committed; left by an interrupted "
                                                      "topic creation or deletion")
        if not self._page_cache_trusted:  # every byte of the log is now verified or written by this boot
            restart_points.record_verified_boot(self.data_dir, boot_id)
        self._page_cache_trusted = False  # partitions created from now on are new
        log.info("loaded %d topic(s), %d partition(s) from %s; open segment files at most %d, "
                 "max.broker.partitions %d", len(self.topics), self.partition_count, self.data_dir,
                 self.files.limit, self.max_broker_partitions)

    def _open_partition(self, topic: str, index: int, directory: Path, overrides: dict[str, Any],
                        saved_producers: producer_checkpoint.Entry | None = None) -> Partition:
        partition = Partition(topic, index, directory, self.topic_config(overrides), self.files)
        partition.open(verify=not self._page_cache_trusted, saved_producers=saved_producers)
        return partition

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
        await self.group_commit.close()
        # The restart points queued so far written by their thread, not one partition at a time here.
        await asyncio.get_running_loop().run_in_executor(None, restart_writer.WRITER.wait_idle)
        one_sync = disk.syncfs_is_durable(self.data_dir)  # else each partition syncs its own files
        saved: dict[producer_checkpoint.Key, producer_checkpoint.Entry | None] = {}
        for topic in self.topics.values():
            for partition in topic.partitions:
                await partition.quiesce()
                key = (topic.topic_id, partition.index)
                saved[key] = partition.close(sync=not one_sync) or producer_checkpoint.carried_over(
                    self._producer_checkpoint.get(key), partition.producers.snapshot_offset)
        entries = {key: entry for key, entry in saved.items() if entry is not None}
        if entries != self._producer_checkpoint:
            producer_checkpoint.write(self.data_dir, entries)
        if not one_sync:
            return
        try:  # what the partitions wrote, durable at once (Partition.close)
            disk.sync_filesystem(self.data_dir)
        except KafkaError as exc:
            log.warning("closed without syncing %s (%s): a power cut now could lose what was written "
                        "since the last flush", self.data_dir, exc.message)

    # ------------------------------------------------------------------ topics

    def topic_config(self, overrides: dict[str, Any]) -> dict[str, Any]:
        config = self.config.topic_defaults()
        config.update(overrides)
        return config

    @property
    def partition_count(self) -> int:
        return sum(len(topic.partitions) for topic in self.topics.values())

    @property
    def max_broker_partitions(self) -> int:
        configured = self.config["max.broker.partitions"]
        if configured is not None:
            return configured
        return max(self.files.limit, MIN_DEFAULT_BROKER_PARTITIONS)

    def check_capacity(self, name: str, count: int, pending: int = 0) -> None:
        """Refuse ``count`` new partitions of topic ``name`` past ``max.broker.partitions``.

        ``pending``: partitions accepted but not yet created (a validate-only request).
        As KIP-578 proposed, the internal topics are never refused (they count, though).
        Deviation: KIP-578 proposed a new error code; Kafka never added it, so this
        answers POLICY_VIOLATION, the code Kafka gives a request its policy refuses.
        """
        if name in INTERNAL_TOPICS:
            return
        hosted = self.partition_count + pending
        limit = self.max_broker_partitions
        if hosted + count > limit:
            raise KafkaError(Errors.POLICY_VIOLATION,
                             f"Cannot create {count} partition(s): this broker hosts {hosted} and "
                             f"max.broker.partitions is {limit}.")

    def create_topic(self, name: str, num_partitions: int, overrides: dict[str, Any] | None = None) -> Topic:
        """Create a topic with all its partitions, or nothing (KafkaError with Kafka's code)."""
        validate_topic_name(name)
        if name in self.topics:
            raise KafkaError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if num_partitions <= 0:
            raise KafkaError(Errors.INVALID_PARTITIONS,
                             "Number of partitions was set to an invalid non-positive value.")
        if num_partitions > MAX_PARTITIONS_PER_REQUEST:
            raise KafkaError(Errors.POLICY_VIOLATION, EXCESSIVE_PARTITIONS)
        self.check_capacity(name, num_partitions)
        overrides = dict(overrides or {})
        topic = Topic(name, uuid.uuid4().bytes, overrides)
        topic.partitions = self._create_partitions(topic, 0, num_partitions)
        self.topics[name] = topic
        log.info("created topic %s with %d partition(s)", name, num_partitions)
        return topic

    def set_topic_overrides(self, topic_name: str, overrides: dict[str, Any]) -> None:
        """Replace a topic's config overrides: persisted in its topic record (what start-up reads)
        and every partition's metadata file, then applied to the live partitions' config dicts."""
        topic = self.topics[topic_name]
        self.records.write(TopicRecord(topic.name, topic.topic_id, len(topic.partitions), dict(overrides)))
        for partition in topic.partitions:
            write_partition_metadata(partition.directory, topic.topic_id, overrides)
        topic.overrides = dict(overrides)
        self._apply_configs(topic)

    def refresh_topic_configs(self) -> None:
        """Recompute every partition's config after a broker default changed."""
        for topic in self.topics.values():
            self._apply_configs(topic)

    def _apply_configs(self, topic: Topic) -> None:
        config = self.topic_config(topic.overrides)
        for partition in topic.partitions:
            partition.config.clear()  # in place: the partition and its readers hold this dict
            partition.config.update(config)
            partition.config_changed()

    def add_partitions(self, name: str, new_total: int) -> Topic:
        """Grow topic ``name`` to ``new_total`` partitions, all or nothing (for CreatePartitions)."""
        topic = self.topics.get(name)
        if topic is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        current = len(topic.partitions)
        if new_total == current:
            raise KafkaError(Errors.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
        if new_total < current:
            raise KafkaError(Errors.INVALID_PARTITIONS, f"The topic {name} currently has {current} partition(s); "
                                                        f"{new_total} would not be an increase.")
        if new_total - current > MAX_PARTITIONS_PER_REQUEST:
            # What Kafka answers: its bounded record list overflows inside createPartitions, which
            # reports an unexpected exception as UNKNOWN_SERVER_ERROR without a message. (Kafka
            # also keeps the partitions added before the overflow; here nothing is added.)
            raise KafkaError(Errors.UNKNOWN_SERVER_ERROR)
        self.check_capacity(name, new_total - current)
        topic.partitions.extend(self._create_partitions(topic, current, new_total))
        log.info("topic %s grew from %d to %d partition(s)", name, current, new_total)
        return topic

    def _create_partitions(self, topic: Topic, start: int, end: int) -> list[Partition]:
        """Make partitions ``start..end-1`` of ``topic`` and commit the topic's record with
        ``end`` partitions; on any failure remove every directory made here, then raise."""
        made: list[tuple[Path, Partition | None]] = []
        index = start
        try:
            for index in range(start, end):
                directory = partition_dir(self.data_dir, topic.name, index)
                directory.mkdir()  # never exist_ok: a leftover directory is not ours to reuse
                made.append((directory, None))
                write_partition_metadata(directory, topic.topic_id, topic.overrides)
                made[-1] = (directory, self._open_partition(topic.name, index, directory, topic.overrides))
            self.records.write(TopicRecord(topic.name, topic.topic_id, end, topic.overrides))
        except BaseException as exc:
            self._discard(made)
            if isinstance(exc, OSError):
                raise disk.failed(self.data_dir, exc, f"cannot create partition {topic.name}-{index}") from None
            raise
        return [partition for _directory, partition in made if partition is not None]

    @staticmethod
    def _discard(made: list[tuple[Path, Partition | None]]) -> None:
        left = []
        for directory, partition in made:
            if partition is not None:
                for segment in partition.segments:
                    segment.release()
            if not remove_new_partition_dir(directory):
                left.append(directory)
        if made:
            log.warning("removed %d partition directory(ies) of a creation that failed midway", len(made) - len(left))
        if left:
            log.error("could not remove %d directory(ies) of a failed creation (removed at the next start): %s",
                      len(left), ", ".join(map(str, left[:5])))

    async def delete_topic(self, name: str) -> None:
        topic = self.topics.get(name)
        if topic is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        try:
            self.records.remove(name)  # first: a crash from here on leaves directories start-up removes
        except OSError as exc:
            raise disk.failed(self.data_dir, exc, f"cannot delete topic {name}") from None
        del self.topics[name]
        for partition in topic.partitions:
            await self.cleaner.forget(partition)  # a cleaning pass may be reading it
            await partition.quiesce()  # a worker-thread write may still hold the file
            partition.close(keep_state=False)  # writes nothing: deleting works on a full disk
            shutil.rmtree(partition.directory, ignore_errors=True)
        log.info("deleted topic %s", name)

    def get_or_create(self, name: str, *, allow_create: bool) -> Topic:
        topic = self.topics.get(name)
        if topic is not None:
            return topic
        validate_topic_name(name)
        # Deviation: Kafka auto-creates an internal topic with its coordinator's partition count;
        # here its coordinator creates it on first use, so a client never makes one with
        # num.partitions (which the coordinator's key hashing could not live with).
        if name in INTERNAL_TOPICS or not (allow_create and self.config["auto.create.topics.enable"]):
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
        """Message-count flush policy (log.flush.interval.messages / flush.messages): the caller
        answers once the fsync is done; writers waiting together share it (group_commit.py)."""
        if partition.unflushed_messages >= partition.config["flush.messages"]:
            await self._fsync(partition)

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
                    try:
                        await self._fsync(partition)
                    except KafkaError:
                        pass  # logged where it failed; the segment stays unflushed for the next round

    async def _fsync(self, partition: Partition) -> None:
        segments, directory = partition.take_unflushed(self.clock.now_ms())
        try:
            await self.group_commit.sync(segments, directory)
        except KafkaError:
            partition.directory_unsynced = partition.directory_unsynced or directory is not None
            raise

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
            deleted += log_start.apply_retention(partition, now)
            partition.producers.expire(now, expiration)
        return deleted
