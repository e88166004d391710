"""``producer-state-checkpoint``: every partition's producer state at a clean shutdown, in one
file of the data directory (as Kafka keeps one recovery-point and log-start checkpoint file
per log directory, not one per partition).

A snapshot file per partition costs a file creation each, and a shutdown of thousands of
written partitions spent seconds creating them (2-3 ms each on a loaded VM). So the shutdown
writes the state of each partition that changed since its newest snapshot here, in one
file, with the entries of the previous one still current carried over, and syncs the
filesystem once (``LogManager.close``). A partition opening takes its entry when it is newer
than its newest snapshot file and not past its log end (as for a snapshot file), and replays
the log after it. Entries are keyed by topic id: a topic deleted and created again under its
name matches none.

Layout, big-endian: version int16 (0), crc32c int32 of what follows; then count int32 and per
entry topic id (16 bytes), partition int32, offset int64, length int32 and a snapshot file's
bytes (``producer_state.SnapshotFile``, with its own CRC). No fsync of its own: lost or torn,
each partition replays from its newest snapshot file instead.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import crc32c

from weir.protocol.errors import KafkaError

from . import disk

log = logging.getLogger(__name__)

FILE_NAME = "producer-state-checkpoint"
VERSION = 0
_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">16siqi")

Key = tuple[bytes, int]  # topic id, partition
Entry = tuple[int, bytes]  # offset, snapshot bytes


def load(data_dir: Path) -> dict[Key, Entry]:
    try:
        data = (data_dir / FILE_NAME).read_bytes()
    except FileNotFoundError:
        return {}
    entries: dict[Key, Entry] = {}
    try:
        version, crc = _HEADER.unpack_from(data)
        if version != VERSION or crc32c.crc32c(data[_HEADER.size:]) != crc:
            raise ValueError("unknown version or crc mismatch")
        (count,), position = _COUNT.unpack_from(data, _HEADER.size), _HEADER.size + _COUNT.size
        for _ in range(count):
            topic_id, index, offset, length = _ENTRY.unpack_from(data, position)
            position += _ENTRY.size
            entries[(topic_id, index)] = (offset, data[position:position + length])
            position += length
    except (struct.error, ValueError) as exc:
        log.warning("ignoring %s (%s): partitions replay from their snapshot files", data_dir / FILE_NAME, exc)
        return {}
    return entries


def write(data_dir: Path, entries: dict[Key, Entry]) -> None:
    """Replace the file (no fsync: the caller syncs the filesystem). A failure is logged: the
    next start replays from the snapshot files."""
    body = bytearray(_COUNT.pack(len(entries)))
    for (topic_id, index), (offset, snapshot) in entries.items():
        body += _ENTRY.pack(topic_id, index, offset, len(snapshot))
        body += snapshot
    try:
        disk.replace_file(data_dir / FILE_NAME, _HEADER.pack(VERSION, crc32c.crc32c(body)) + body)
    except KafkaError as exc:
        log.warning("producer state checkpoint not written (%s): the next start replays more", exc.message)


def carried_over(previous: Entry | None, snapshot_offset: int) -> Entry | None:
    """The previous file's entry of a partition whose state has not changed since it loaded it."""
    return previous if previous is not None and previous[0] == snapshot_offset else None
