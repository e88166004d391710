"""Group commit: one fsync per file for every request waiting on it, in a worker thread.

With ``flush.messages=1`` (``log.flush.interval.messages``) each Produce, coordinator record
and marker waits until its batch is on the disk before it is answered. Waiters register
the files their write dirtied (segments, and a partition directory that gained a file) and
wait for the next round; a round takes everything registered so far and fsyncs each file
once, in a worker thread, while the event loop goes on serving (and registering the
writers that arrive meanwhile for the round after). So N writers that arrive together
cost one fsync per file, not N, and the loop never waits on the disk.

A round starts only after every write it covers returned: registration happens on the
loop after the write, so a file's fsync in a round covers every write registered for it.

Kafka flushes in the appending thread, under the log's lock (``UnifiedLog.append`` calls
``flush`` once ``unflushedMessages >= flushInterval``): one fsync per append, writers of a
partition queued behind it. Same promise (answered after the fsync), fewer fsyncs.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from weir.protocol.errors import KafkaError

from . import disk

if TYPE_CHECKING:
    from .segment import Segment

log = logging.getLogger(__name__)


class GroupCommit:
    def __init__(self):
        self._segments: dict[Segment, None] = {}  # the next round's files, in registration order
        self._directories: dict[Path, None] = {}
        self._next: asyncio.Future | None = None  # resolved when the next round is done
        self._runner: asyncio.Task | None = None
        self.rounds = 0
        self.fsyncs = 0

    async def sync(self, segments: list[Segment], directory: Path | None = None) -> None:
        """Return once ``segments`` (and ``directory``) are on the disk; KAFKA_STORAGE_ERROR
        (from the disk layer) if one of them failed, and the segment stays unflushed."""
        if not segments and directory is None:
            return
        for segment in segments:
            self._segments[segment] = None
        if directory is not None:
            self._directories[directory] = None
        loop = asyncio.get_running_loop()
        if self._next is None:
            self._next = loop.create_future()
        done = self._next
        if self._runner is None:
            self._runner = loop.create_task(self._run())
        failures = await asyncio.shield(done)  # a waiter cancelled (its connection closed) leaves the round
        for item in (*segments, directory):
            if item in failures:
                raise failures[item]

    async def close(self) -> None:
        """Wait for the round in flight and those registered behind it."""
        if self._runner is not None:
            await asyncio.shield(self._runner)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._next is not None:
                segments, self._segments = list(self._segments), {}
                directories, self._directories = list(self._directories), {}
                done, self._next = self._next, None
                failures: dict[object, KafkaError] = {}
                pinned = []
                for segment in segments:
                    try:
                        segment.pin()  # open for the worker thread; retention may delete it meanwhile
                        pinned.append(segment)
                    except KafkaError as exc:
                        failures[segment] = exc
                try:
                    failures.update(await loop.run_in_executor(None, _fsync_all, pinned, directories))
                except BaseException as exc:  # noqa: BLE001 - the waiters learn of it, then it goes on
                    if isinstance(exc, asyncio.CancelledError):
                        done.cancel()
                    elif not done.done():
                        done.set_exception(exc)
                    raise
                finally:
                    for segment in pinned:
                        segment.unpin()
                for item in failures:
                    if hasattr(item, "unflushed"):
                        item.unflushed = True  # the next flush tries again
                self.rounds += 1
                self.fsyncs += len(pinned) + len(directories)
                done.set_result(failures)
        finally:
            self._runner = None


def _fsync_all(segments: list[Segment], directories: list[Path]) -> dict[object, KafkaError]:
    """In the worker thread: fsync each file, then each directory (a new file's name after its data)."""
    failures: dict[object, KafkaError] = {}
    for segment in segments:
        try:
            segment.fsync()
        except KafkaError as exc:
            failures[segment] = exc
    for directory in directories:
        try:
            disk.fsync_directory(directory)
        except KafkaError as exc:
            failures[directory] = exc
    return failures
