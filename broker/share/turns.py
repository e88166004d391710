"""One share request at a time per connection, as Kafka processes them.

Kafka mutes a connection while one of its requests is in progress, so a member's ShareAcknowledge
sent behind its own long-polling ShareFetch is applied only once that fetch has answered. Weir
reads ahead on a connection and answers in order, which would let the acknowledgement run first
and hand a record it releases straight to the waiting fetch (its delivery count raised, to a
client that did not expect it: the Java client, holding RENEWed records, leaves it unread until
its lock expires). ShareFetch and ShareAcknowledge take their connection's turn in arrival order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class RequestTurns:
    def __init__(self) -> None:
        # connection -> (its lock, how many requests hold it or wait for it)
        self._turns: dict[int, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def turn(self, connection: object) -> AsyncIterator[None]:
        """Wait for the earlier share requests of ``connection`` (its session object; None, as in
        handler tests, waits for nothing) to finish."""
        if connection is None:
            yield
            return
        key = id(connection)
        lock, users = self._turns.get(key, (asyncio.Lock(), 0))
        self._turns[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._turns[key]
            if users == 1:
                del self._turns[key]  # bounded by the requests in progress
            else:
                self._turns[key] = (lock, users - 1)
