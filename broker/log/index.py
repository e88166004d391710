"""Sparse offset and time indexes of one segment.

Kept in memory as parallel arrays, so a lookup is a bisect and an append
touches no file. The file is written whole (temporary file, fsync, rename)
when the segment is sealed: only a sealed segment's index is trusted at
every start-up (the active segment's is rebuilt from its log, or in the same
boot resumed from its checkpoint: restart_points.py), so an index holds no
file descriptor (Kafka, too, rebuilds the active segment's indexes after an
unclean shutdown). Entry formats follow Kafka's: ``.index`` holds (relative
offset int32, position int32), ``.timeindex`` holds (timestamp int64, relative
offset int32). A file that fails validation is rebuilt from the log by the
segment.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from typing import NamedTuple

import construct as c

from . import disk

# Declarations (read by tests and tools) and the precompiled codecs the append path uses.
OffsetEntry = c.Struct("relative_offset" / c.Int32sb, "position" / c.Int32sb)
TimeEntry = c.Struct("timestamp" / c.Int64sb, "relative_offset" / c.Int32sb)
OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")


class IndexWrite(NamedTuple):
    """Bytes for an index file, taken on the event loop; ``write`` is pure file I/O."""
    path: str
    data: bytes
    replace: bool  # the whole file (else: appended to what it holds)

    def write(self) -> None:
        if self.replace:
            disk.replace_file(self.path, self.data)
        else:
            disk.append_file(self.path, self.data)


class _Index:
    ENTRY: struct.Struct

    def __init__(self, path: str):
        self.path = path
        self.keys = array("q")
        self.values = array("q")
        self.on_disk = -1  # entries the file holds as memory holds them (-1: the file may differ)

    def __len__(self) -> int:
        return len(self.keys)

    def _pack(self, key: int, value: int) -> bytes:
        """One entry as the file holds it (each index's own format)."""
        raise NotImplementedError

    def _unpack(self, raw: bytes) -> tuple[int, int]:
        raise NotImplementedError

    def load(self) -> bool:
        """Read the file into memory; False when it is missing, torn or out of order."""
        size = self.ENTRY.size
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read()
        except FileNotFoundError:
            return False
        if len(raw) % size:
            return False
        keys, values = array("q"), array("q")
        for start in range(0, len(raw), size):
            key, value = self._unpack(raw[start:start + size])
            if keys and (key < keys[-1] or value < values[-1]):
                return False
            keys.append(key)
            values.append(value)
        self.keys, self.values = keys, values
        self.on_disk = len(keys)
        return True

    def reset(self) -> None:
        self.keys, self.values = array("q"), array("q")
        self.on_disk = -1

    def truncate_to_value(self, max_value: int) -> None:
        """Drop entries whose value (position or offset) is at or past ``max_value``."""
        keep = bisect.bisect_left(self.values, max_value)
        if keep < len(self.keys):
            del self.keys[keep:]
            del self.values[keep:]
            if self.on_disk > keep:
                self.on_disk = -1

    def append(self, key: int, value: int) -> None:
        self.keys.append(key)
        self.values.append(value)

    def floor(self, key: int) -> int | None:
        """Value of the last entry whose key is <= ``key``."""
        i = bisect.bisect_right(self.keys, key)
        return self.values[i - 1] if i else None

    def write_file(self) -> None:
        """Replace the file with the entries in memory, durably (a crash leaves old or new): a
        sealed segment's, trusted at every start."""
        data = self._packed(range(len(self.keys)))
        disk.replace_durably(self.path, data, sync_directory=False)  # the segment's fsync of the log covers it
        self.on_disk = len(self.keys)

    def take_unwritten(self) -> IndexWrite | None:
        """What an active segment's checkpoint writes (without fsync): the entries appended since
        the file was last written, or all of them when it may differ. Taken on the event loop and
        counted as on the file from now on; the write may follow in a worker thread (restart
        points), and its failure calls ``written_wrongly``. A checkpoint costs what it adds."""
        if self.on_disk < 0:
            taken = IndexWrite(self.path, self._packed(range(len(self.keys))), replace=True)
        elif self.on_disk < len(self.keys):
            taken = IndexWrite(self.path, self._packed(range(self.on_disk, len(self.keys))), replace=False)
        else:
            return None
        self.on_disk = len(self.keys)
        return taken

    @property
    def unwritten(self) -> int:
        """Entries a checkpoint would add to the file (all of them when the file may differ)."""
        return len(self.keys) - max(self.on_disk, 0)

    def written_wrongly(self) -> None:
        """A taken write failed (cut back by the disk layer): the next checkpoint rewrites the file."""
        self.on_disk = -1

    def _packed(self, entries: range) -> bytes:
        keys, values = self.keys, self.values
        return b"".join(self._pack(keys[i], values[i]) for i in entries)

    def delete(self) -> None:
        self.on_disk = -1
        for path in (self.path, self.path + ".tmp"):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


class OffsetIndex(_Index):
    """absolute offset -> file position (stored relative to the segment base)."""
    ENTRY = OFFSET_ENTRY

    def __init__(self, path: str, base_offset: int):
        super().__init__(path)
        self.base_offset = base_offset

    def _pack(self, offset: int, position: int) -> bytes:
        return OFFSET_ENTRY.pack(offset - self.base_offset, position)

    def _unpack(self, raw: bytes) -> tuple[int, int]:
        relative_offset, position = OFFSET_ENTRY.unpack(raw)
        return relative_offset + self.base_offset, position

    def truncate_to_position(self, size: int) -> None:
        self.truncate_to_value(size)


class TimeIndex(_Index):
    """max timestamp so far -> absolute offset of the batch that reached it."""
    ENTRY = TIME_ENTRY

    def __init__(self, path: str, base_offset: int):
        super().__init__(path)
        self.base_offset = base_offset

    def _pack(self, timestamp: int, offset: int) -> bytes:
        return TIME_ENTRY.pack(timestamp, offset - self.base_offset)

    def _unpack(self, raw: bytes) -> tuple[int, int]:
        timestamp, relative_offset = TIME_ENTRY.unpack(raw)
        return timestamp, relative_offset + self.base_offset

    def floor_before(self, timestamp: int) -> int | None:
        """Offset of the last entry with a timestamp strictly below ``timestamp``."""
        i = bisect.bisect_left(self.keys, timestamp)
        return self.values[i - 1] if i else None
