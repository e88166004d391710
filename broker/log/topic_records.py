"""Which topics exist on disk: one record file per topic, written last when it is created.

``<data-dir>/<topic>-<partition>/`` holds a partition (with a
``partition.metadata`` naming its topic id, as Kafka keeps it). A topic
exists only once ``<data-dir>/topics/<topic>.json`` (topic id, partition
count, config overrides) has been written, atomically and after every one of
its partition directories: that record is what makes creating a topic, or
adding partitions to it, all-or-nothing across a crash. At start-up a
partition directory no record accounts for (an interrupted creation, partition
addition or deletion) is removed with a log line; deleting a topic removes its
record first. Kafka keeps the same facts in its metadata log; one process needs
only these small files.

A data directory written before records existed (no ``topics/``) is adopted
once: every topic found in partition directories gets its record.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import disk

log = logging.getLogger(__name__)

RECORDS_DIR = "topics"
METADATA_FILE = "partition.metadata"
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_RECORD_SUFFIX = ".json"


@dataclass
class TopicRecord:
    name: str
    topic_id: bytes
    partitions: int
    configs: dict[str, Any] = field(default_factory=dict)


def partition_dir(data_dir: Path, topic: str, index: int) -> Path:
    return data_dir / f"{topic}-{index}"


def partition_dirs(data_dir: Path) -> dict[str, dict[int, Path]]:
    """Every directory named like a partition, by topic and index."""
    found: dict[str, dict[int, Path]] = {}
    for entry in os.scandir(data_dir):
        match = _PARTITION_DIR.match(entry.name)
        if match and entry.is_dir(follow_symlinks=False):
            found.setdefault(match.group(1), {})[int(match.group(2))] = Path(entry.path)
    return found


def write_partition_metadata(directory: Path, topic_id: bytes, configs: dict[str, Any]) -> None:
    text = json.dumps({"version": 0, "topic_id": topic_id.hex(), "configs": configs})
    disk.write_file(directory / METADATA_FILE, text.encode())


class TopicRecords:
    def __init__(self, data_dir: Path):
        self.data_dir = data_dir
        self.directory = data_dir / RECORDS_DIR

    def _path(self, name: str) -> Path:
        return self.directory / (name + _RECORD_SUFFIX)

    def write(self, record: TopicRecord) -> None:
        """Durably commit ``record``: partition directories first, then the record (tmp, rename)."""
        disk.fsync_directory(self.data_dir)  # the partition directories just made survive a power loss
        disk.replace_durably(self._path(record.name), json.dumps({
            "version": 1, "topic_id": record.topic_id.hex(), "partitions": record.partitions,
            "configs": record.configs}).encode())

    def remove(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)  # an unlink needs no space: it works on a full disk
        disk.fsync_directory(self.directory)

    def load(self) -> dict[str, TopicRecord]:
        """The committed topics; adopts a data directory from before records existed."""
        if not self.directory.is_dir():
            return self._adopt_legacy()
        records = {}
        for path in self.directory.iterdir():
            if path.name.endswith(".tmp"):  # a record being written when the process stopped
                path.unlink(missing_ok=True)
                continue
            if not path.name.endswith(_RECORD_SUFFIX):
                continue
            data = json.loads(path.read_text())
            name = path.name[:-len(_RECORD_SUFFIX)]
            records[name] = TopicRecord(name, bytes.fromhex(data["topic_id"]), data["partitions"],
                                        data.get("configs", {}))
        return records

    def _adopt_legacy(self) -> dict[str, TopicRecord]:
        """Every topic with partition directories counts as created (what older Weir loaded):
        partitions 0..n-1 up to the first one missing its metadata."""
        records = {}
        for name, found in partition_dirs(self.data_dir).items():
            count = 0
            while count in found and (found[count] / METADATA_FILE).exists():
                count += 1
            if count:
                meta = json.loads((found[0] / METADATA_FILE).read_text())
                records[name] = TopicRecord(name, bytes.fromhex(meta["topic_id"]), count, meta.get("configs", {}))
        self.directory.mkdir(parents=True, exist_ok=True)
        for record in records.values():
            self.write(record)
        if records:
            log.warning("adopted %d topic(s) from a data directory without topic records (written by an "
                        "older Weir): %s", len(records), ", ".join(sorted(records)))
        return records


def remove_new_partition_dir(directory: Path) -> bool:
    """Remove a partition directory made moments ago; True when it is gone.

    A new partition holds only its metadata file (its first .log is created by
    the first write), so this needs no directory listing and therefore no file
    descriptor: it works when the process has run out of them.
    """
    try:
        (directory / METADATA_FILE).unlink(missing_ok=True)
        directory.rmdir()
        return True
    except FileNotFoundError:
        return True
    except OSError:
        shutil.rmtree(directory, ignore_errors=True)
        return not directory.exists()


def remove_stray_partition_dir(directory: Path, why: str) -> None:
    """Remove a partition directory no topic record accounts for, if it is one of ours."""
    if not (directory / METADATA_FILE).exists() and any(directory.iterdir()):
        log.warning("leaving %s alone: named like a partition but not made by Weir (no %s)",
                    directory, METADATA_FILE)
        return
    log.warning("removing partition directory %s: %s", directory, why)
    shutil.rmtree(directory, ignore_errors=True)
