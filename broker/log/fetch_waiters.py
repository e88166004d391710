"""Fetches waiting for a partition to grow (``max_wait_ms`` with fewer than ``min_bytes``): the
fetch handler registers a future on each partition it reads, and the partition's next append
(``Partition._write``, once the batch is visible) wakes them all. One future may wait on many
partitions; whoever wakes it first wins, the fetch reads again and unregisters it everywhere."""

from __future__ import annotations

import asyncio


class FetchWaiters:
    def __init__(self) -> None:
        self._waiting: list[asyncio.Future[None]] = []

    def add(self, future: asyncio.Future[None]) -> None:
        self._waiting.append(future)

    def remove(self, future: asyncio.Future[None]) -> None:
        try:
            self._waiting.remove(future)
        except ValueError:
            pass

    def wake(self) -> None:
        if self._waiting:
            waiting, self._waiting = self._waiting, []
            for future in waiting:
                if not future.done():
                    future.set_result(None)
