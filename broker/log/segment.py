"""One log segment: a ``.log`` file of raw record batches plus its indexes.

Files are named by the segment's 20-digit base offset, as Kafka names them.
Batches are written exactly as produced, with only baseOffset and
partitionLeaderEpoch restamped (neither is covered by the CRC).

The ``.log`` file is opened on first use and stays open while used; the
broker's ``SegmentFiles`` closes idle ones (see open_files.py) and a closed
segment reopens on its next read or write. Indexes are in memory and written
whole when the segment is sealed, so a segment holds one descriptor at most.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

from weir.protocol import records as rec
from weir.protocol.errors import KafkaError
from weir.protocol.response_pieces import FileRegion

from .index import IndexWrite, OffsetIndex, TimeIndex
from . import disk
from .open_files import SegmentFiles
from .txn_index import TransactionIndex

log = logging.getLogger(__name__)

SCAN_CHUNK = 1024 * 1024  # recovery reads whole batches to check CRCs
LOOKUP_CHUNK = 16 * 1024  # an offset lookup walks headers from an index entry a few KiB back


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


@dataclass(slots=True)
class ScannedBatch:
    position: int
    header: rec.BatchHeader


class Segment:
    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int, files: SegmentFiles):
        self.directory = directory
        self.base_offset = base_offset
        stem = str(directory / segment_name(base_offset))
        self.log_path = stem + ".log"
        self._files = files
        self._disk = disk.log_dir_of(directory)  # its data directory's health, kept for the append path
        self._fd: int | None = None  # open while used; created on the first write
        self._pins = 0
        self._release_when_unpinned = False
        self._retired = False  # replaced by the cleaner: see retire
        try:
            self.size = os.stat(self.log_path).st_size
        except FileNotFoundError:
            self.size = 0
        self.offset_index = OffsetIndex(stem + ".index", base_offset)
        self.time_index = TimeIndex(stem + ".timeindex", base_offset)
        self.txn_index = TransactionIndex(stem + ".txnindex")
        self.index_interval_bytes = index_interval_bytes
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.last_batch_offset = -1
        self._bytes_since_index = 0
        self.unflushed = False
        self.checkpointed_size = 0  # the size at the last index checkpoint (write_index_checkpoint)

    # ---------------------------------------------------------------- writing

    def write(self, chunks, size: int) -> int:
        """Write one batch (given as buffers) at the end of the file; return its position.

        Pure I/O, safe to run in a worker thread: it changes no state the event
        loop reads. ``commit`` then makes the batch visible.
        """
        position = self.size
        fd = self._fd
        if fd is None:  # only on the loop: a worker thread writes a pinned, open segment
            fd = self._open()
        disk.write_at(fd, self.log_path, chunks, size, position, self._disk)  # all or nothing: a torn write is cut
        return position

    async def write_in_worker(self, chunks, size: int) -> int:
        """``write`` from a worker thread, the file pinned open until it returns."""
        self.pin()
        try:
            return await asyncio.get_running_loop().run_in_executor(None, self.write, chunks, size)
        finally:
            self.unpin()

    def commit(self, base_offset: int, last_offset: int, max_timestamp: int, position: int, size: int) -> None:
        """Account for a batch ``write`` put at ``position``: size, offsets, indexes."""
        self.size = position + size
        self.next_offset = last_offset + 1
        self.unflushed = True
        if self._fd is not None:
            self._files.used(self)
        self._index_batch(base_offset, max_timestamp, position, size)

    def _index_batch(self, base_offset: int, max_timestamp: int, position: int, size: int) -> None:
        self.last_batch_offset = base_offset
        if self._bytes_since_index >= self.index_interval_bytes or not len(self.offset_index):
            self.offset_index.append(base_offset, position)
            self._bytes_since_index = 0
        self._bytes_since_index += size
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            if not len(self.time_index) or self._bytes_since_index == size:
                self.time_index.append(max_timestamp, base_offset)

    def seal(self) -> None:
        """On roll: record the final max timestamp so retention can trust the time index,
        write the indexes, and let the file be closed (reads reopen it)."""
        if self.max_timestamp >= 0 and (not len(self.time_index)
                                        or self.time_index.keys[-1] < self.max_timestamp):
            self.time_index.append(self.max_timestamp, self.last_batch_offset)
        self.offset_index.write_file()  # each raises KAFKA_STORAGE_ERROR (disk.py) on a failed write
        self.time_index.write_file()
        self.flush()
        self.txn_index.flush()
        self.release()

    def truncate(self, position: int) -> None:
        disk.truncate(self._handle(), self.log_path, position)
        self.size = position
        self.offset_index.truncate_to_position(position)

    def flush(self) -> None:
        if self.unflushed:
            self.fsync()
            self.unflushed = False

    def fsync(self) -> None:
        """Push this segment's files to the disk. Pure I/O on a pinned segment (safe in a
        worker thread); on the event loop it reopens a closed file first. fsync through any
        descriptor flushes all of a file's written data, so closing one loses nothing."""
        disk.fsync(self._fd if self._fd is not None else self._handle(), self.log_path)
        self.txn_index.fsync()

    # ---------------------------------------------------------------- the open file

    @property
    def pinned(self) -> bool:
        return self._pins > 0

    def pin(self) -> int:
        """Open the file and keep it open until ``unpin`` (for work in a worker thread, or a
        region being sent); its descriptor. A pinned segment deleted meanwhile (retention,
        DeleteRecords, compaction) is unlinked, and its descriptor, still open, keeps reading
        the bytes it had; it closes at the last ``unpin``."""
        fd = self._handle()
        self._pins += 1
        return fd

    def unpin(self) -> None:
        self._pins -= 1
        if not self._pins:
            if self._release_when_unpinned:
                self._release_when_unpinned = False
                self.release()
            elif self._fd is not None:
                self._files.unpinned(self)  # the budget may be over while it was pinned

    def _handle(self) -> int:
        fd = self._fd
        if fd is None:
            return self._open()
        self._files.used(self)
        return fd

    def _open(self) -> int:
        fd = disk.open_file(self.log_path)
        self._fd = fd
        self._files.opened(self)
        return fd

    def move_to(self, files: SegmentFiles) -> None:
        """Count this segment's open file in ``files`` from now on (a segment loaded in a worker
        thread starts with a budget of its own: the broker's is touched on the event loop only)."""
        if self._fd is not None:
            self._files.closed(self)
            files.opened(self)
        self._files = files

    def release(self) -> None:
        """Close the file (it reopens on the next use); a pinned one once its worker thread is done."""
        if self._fd is None:
            return
        if self._pins:
            self._release_when_unpinned = True
            return
        self._files.closed(self)
        fd, self._fd = self._fd, None
        if self._retired:
            _close_in_worker(fd)
        else:
            os.close(fd)

    def retire(self) -> None:
        """Release a segment the log cleaner replaced. Its file was unlinked while open, so the
        last close frees its blocks, which on a busy disk took 30-50 ms for a few MB: that
        close runs in a worker thread, not on the event loop."""
        self._retired = True
        self.release()

    # ---------------------------------------------------------------- reading

    def read(self, position: int, length: int) -> bytes:
        return os.pread(self._handle(), length, position)

    def region(self, position: int, length: int) -> SegmentRegion:
        """Bytes of this segment by reference: the connection sends them with sendfile."""
        return SegmentRegion(self, position, length)

    def scan(self, position: int = 0, *, verify: bool = False, chunk_size: int = SCAN_CHUNK) -> Iterator[ScannedBatch]:
        """Walk batch headers from ``position`` to the end of the file.

        Stops at the first batch that is incomplete, has a bad length or magic,
        or (with ``verify``) fails its CRC: that is where a torn tail starts.
        Without ``verify`` a batch's body is never read, only jumped over.
        """
        for batch_position, header, _body in self._walk(position, chunk_size, with_bodies=verify, verify=verify):
            yield ScannedBatch(batch_position, header)

    def batches(self, position: int = 0) -> Iterator[tuple[int, rec.BatchHeader, memoryview]]:
        """(position, header, bytes) of each whole batch from ``position``, read a chunk at a time
        (replay reads every batch: one pread per chunk, not per batch). Unverified: ``scan``'s
        stopping rules only; recovery has checked the CRCs by then."""
        return self._walk(position, SCAN_CHUNK, with_bodies=True, verify=False)

    def _walk(self, position: int, chunk_size: int, *, with_bodies: bool,
              verify: bool) -> Iterator[tuple[int, rec.BatchHeader, memoryview]]:
        """The one chunked walk behind ``scan`` and ``batches``: one pread per chunk. Without
        ``with_bodies`` a batch running past the chunk is yielded with an empty body and jumped
        over; with it, the walk rereads from that batch (alone when it is larger than a chunk)."""
        end = self.size
        while position + rec.HEADER_SIZE <= end:
            chunk = memoryview(os.pread(self._handle(), min(chunk_size, end - position), position))
            offset = 0
            while offset + rec.HEADER_SIZE <= len(chunk):
                header = rec.read_header(chunk, offset)
                if header.magic != rec.MAGIC or header.batch_length < rec.MIN_BATCH_LENGTH:
                    return
                if position + offset + header.size > end:
                    return
                if offset + header.size > len(chunk):
                    if not with_bodies:
                        yield position + offset, header, chunk[:0]
                        offset += header.size
                        break
                    if offset == 0:  # one batch larger than the chunk: read it alone
                        chunk = memoryview(os.pread(self._handle(), header.size, position))
                        continue
                    break
                if verify and not rec.crc_ok(chunk, offset, header):
                    return
                yield position + offset, header, chunk[offset:offset + header.size]
                offset += header.size
            position += offset

    def position_of(self, offset: int) -> tuple[int, rec.BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``."""
        start = self.offset_index.floor(offset)
        for batch in self.scan(start or 0, chunk_size=LOOKUP_CHUNK):
            if batch.header.last_offset >= offset:
                return batch.position, batch.header
        return None

    def first_batch_at_or_after_time(self, timestamp: int) -> rec.BatchHeader | None:
        start_offset = self.time_index.floor_before(timestamp)
        start = self.offset_index.floor(start_offset) if start_offset is not None else 0
        for batch in self.scan(start or 0, chunk_size=LOOKUP_CHUNK):
            if batch.header.max_timestamp >= timestamp:
                return batch.header
        return None

    # ---------------------------------------------------------------- recovery

    def recover(self, verify: bool = True) -> int:
        """Validate every batch, cut a torn tail, rebuild the indexes; bytes cut. Without
        ``verify`` only the batches' lengths and offsets are checked, not their CRCs (see
        LogManager.open: the page cache still holds what this boot wrote)."""
        self.offset_index.reset()
        self.time_index.reset()
        self.offset_index.delete()  # an active segment's index checkpoint may describe other bytes now
        self.time_index.delete()
        self._bytes_since_index = 0
        self.max_timestamp = -1
        valid_end = 0
        for batch in self.scan(0, verify=verify):
            header = batch.header
            if header.base_offset < self.next_offset:
                break  # offsets must only grow; anything else is garbage
            self._index_batch(header.base_offset, header.max_timestamp, batch.position, header.size)
            self.next_offset = header.last_offset + 1
            valid_end = batch.position + header.size
        cut = self.size - valid_end
        if cut:
            log.warning("truncating %d torn bytes at position %d of %s", cut, valid_end, self.log_path)
            self.truncate(valid_end)
        return cut

    def take_index_checkpoint(self) -> list[IndexWrite]:
        """The active segment's indexes as they stand, for a checkpoint without fsync (a clean close,
        and as restart_points.INDEX_CHECKPOINT_BYTES/_ENTRIES pace it, in a worker thread): a restart
        in the same boot resumes from them (``resume``). Taken on the loop; the caller writes them, in
        order."""
        self.checkpointed_size = self.size
        return [taken for index in (self.offset_index, self.time_index)
                if (taken := index.take_unwritten()) is not None]

    def index_checkpoint_failed(self, _exc: KafkaError | None = None) -> None:
        """A taken checkpoint did not reach its files: the next one rewrites them whole."""
        self.offset_index.written_wrongly()
        self.time_index.written_wrongly()

    def write_index_checkpoint(self) -> None:
        """``take_index_checkpoint`` written here and now (a clean close)."""
        try:
            for taken in self.take_index_checkpoint():
                taken.write()
        except KafkaError:
            self.index_checkpoint_failed()
            raise

    def resume(self) -> int | None:
        """Recover the active segment from its index checkpoint, when the page cache can be
        trusted (LogManager.open): the batches up to the last indexed one are taken as indexed,
        those after it are walked (lengths and offsets) and indexed, a tail torn short is cut.
        Bytes cut; None when there is no usable checkpoint (then ``recover``)."""
        if not (self.offset_index.load() and self.time_index.load() and self._indexes_fit()) \
                or not len(self.offset_index):
            self.offset_index.reset()
            self.time_index.reset()
            return None
        start = self.offset_index.values[-1]
        indexed = (len(self.offset_index), len(self.time_index))
        self.max_timestamp = self.time_index.keys[-1] if len(self.time_index) else -1
        valid_end = start
        for batch in self.scan(start):
            header = batch.header
            if batch.position == start:
                if header.base_offset != self.offset_index.keys[-1]:
                    self.offset_index.reset()
                    self.time_index.reset()
                    return None  # not the batch the checkpoint indexed there
                self.last_batch_offset = header.base_offset
                self._bytes_since_index = header.size
                self.max_timestamp = max(self.max_timestamp, header.max_timestamp)
            elif header.base_offset < self.next_offset:
                break
            else:
                self._index_batch(header.base_offset, header.max_timestamp, batch.position, header.size)
            self.next_offset = header.last_offset + 1
            valid_end = batch.position + header.size
        if valid_end == start:  # the indexed batch itself is gone or torn: start over
            self.offset_index.reset()
            self.time_index.reset()
            return None
        cut = self.size - valid_end
        if cut:
            log.warning("truncating %d torn bytes at position %d of %s", cut, valid_end, self.log_path)
            self.truncate(valid_end)
        if (len(self.offset_index), len(self.time_index)) == indexed:
            self.checkpointed_size = self.size  # the files on disk say what memory says
        return cut

    def load(self) -> None:
        """Open a sealed segment: trust its indexes when valid, else rebuild them."""
        if self.offset_index.load() and self.time_index.load() and self._indexes_fit():
            start = self.offset_index.values[-1] if len(self.offset_index) else 0
            for batch in self.scan(start):
                self.next_offset = batch.header.last_offset + 1
                self.last_batch_offset = batch.header.base_offset
            self.max_timestamp = self.time_index.keys[-1] if len(self.time_index) else -1
        else:
            self.recover()
            try:  # a sealed segment's indexes are trusted from now on
                self.offset_index.write_file()
                self.time_index.write_file()
            except KafkaError as exc:
                log.warning("cannot write the rebuilt indexes of %s (rebuilt again at the next start): %s",
                            self.log_path, exc)

    def _indexes_fit(self) -> bool:
        return not len(self.offset_index) or self.offset_index.values[-1] < self.size

    def close(self) -> None:
        """Write the aborts and release the file; a failed write was logged by the disk layer and
        leaves the aborts to the replay of the markers at the next start."""
        try:
            self.txn_index.flush()
        except KafkaError:
            pass
        self.release()

    def delete(self) -> None:
        """Remove the files. The name goes at once; the blocks are freed at the inode's last close,
        which (tens of ms for a large segment on a busy disk, retention's or a topic deletion's)
        runs in a worker thread: a descriptor of its own keeps the inode until then."""
        try:
            holder: int | None = os.open(self.log_path, os.O_RDONLY)
        except OSError:  # gone already, or unreadable: unlinked below, or not, as before
            holder = None
        self.release()
        self.txn_index.delete()
        self.offset_index.delete()
        self.time_index.delete()
        try:
            os.unlink(self.log_path)
        except FileNotFoundError:
            pass
        finally:
            if holder is not None:
                _close_in_worker(holder)


def _close_in_worker(fd: int) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop (tools, tests): close here
        os.close(fd)
        return
    loop.run_in_executor(None, os.close, fd)


class SegmentRegion(FileRegion):
    """A byte range of a segment's ``.log`` file (see protocol/response_pieces.py)."""

    __slots__ = ("segment",)

    def __init__(self, segment: Segment, position: int, length: int):
        super().__init__(position, length)
        self.segment = segment

    def read(self) -> bytes:
        return self.segment.read(self.position, self.length)

    def pin(self) -> int:
        return self.segment.pin()

    def unpin(self) -> None:
        self.segment.unpin()
