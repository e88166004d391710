"""Injected time: every timeout in the broker goes through a Clock.

``SystemClock`` is the real one; ``ManualClock`` lets tests move time by hand.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol
from collections.abc import Callable


class Clock:
    def now_ms(self) -> int:
        """Wall-clock milliseconds, used for timestamps that are stored."""
        raise NotImplementedError

    async def wait(self, future: asyncio.Future, timeout_s: float) -> bool:
        """Wait for ``future`` at most ``timeout_s``; True when it completed."""
        raise NotImplementedError

    async def sleep(self, seconds: float) -> None:
        raise NotImplementedError

    def call_later(self, seconds: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` after ``seconds``, unless the returned timer is cancelled first."""
        raise NotImplementedError


class Timer(Protocol):
    def cancel(self) -> None: ...


class SystemClock(Clock):
    def now_ms(self) -> int:
        return int(time.time() * 1000)

    async def wait(self, future: asyncio.Future, timeout_s: float) -> bool:
        if timeout_s <= 0:
            return future.done()
        done, _pending = await asyncio.wait((future,), timeout=timeout_s)
        return bool(done)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def call_later(self, seconds: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(seconds, callback)


class ManualClock(Clock):
    """Time moves only when a test calls ``advance``; timers fire in order."""

    def __init__(self, start_ms: int = 1_700_000_000_000):
        self._now_ms = start_ms
        # a due entry is a future to resolve or a _ManualTimer to run
        self._timers: list[tuple[int, int, asyncio.Future | _ManualTimer]] = []
        self._sequence = itertools.count()

    def now_ms(self) -> int:
        return self._now_ms

    def _timer(self, seconds: float) -> asyncio.Future:
        fired = asyncio.get_running_loop().create_future()
        heapq.heappush(self._timers, (self._now_ms + int(seconds * 1000), next(self._sequence), fired))
        return fired

    def call_later(self, seconds: float, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer(callback)
        heapq.heappush(self._timers, (self._now_ms + int(seconds * 1000), next(self._sequence), timer))
        return timer

    def advance(self, ms: int) -> None:
        """Move time on; every timer due by then runs, in deadline order (a timer set by one runs too)."""
        self._now_ms += ms
        while self._timers and self._timers[0][0] <= self._now_ms:
            _deadline, _seq, fired = heapq.heappop(self._timers)
            if isinstance(fired, _ManualTimer):
                fired.run()
            elif not fired.done():
                fired.set_result(None)

    async def wait(self, future: asyncio.Future, timeout_s: float) -> bool:
        if timeout_s <= 0:
            return future.done()
        await asyncio.wait((future, self._timer(timeout_s)), return_when=asyncio.FIRST_COMPLETED)
        return future.done()

    async def sleep(self, seconds: float) -> None:
        await self._timer(seconds)


class _ManualTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]):
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def run(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.callback()
