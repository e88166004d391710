"""Waiting for something another process or task does: a poll with a deadline, never a bare sleep.

``what`` names the awaited state for the failure message; a callable is asked only on failure, so
it can describe what was seen instead."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def _describe(what: str | Callable[[], str]) -> str:
    return what() if callable(what) else what


def wait_until(condition: Callable[[], T], what: str | Callable[[], str], timeout: float = 30.0,
               interval: float = 0.05) -> T:
    """Poll ``condition`` until it returns something true, and return that; AssertionError after
    ``timeout`` seconds. ``interval`` is the pause between polls (0 when the condition blocks by
    itself, e.g. a consumer's poll)."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {_describe(what)}")
        if interval:
            time.sleep(interval)


async def wait_until_async(condition: Callable[[], T | Awaitable[T]], what: str | Callable[[], str],
                           timeout: float = 10.0, interval: float = 0.01) -> T:
    """``wait_until`` for a condition that another task of this event loop makes true; the condition
    may be a coroutine function (e.g. one asking the broker)."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {_describe(what)}")
        await asyncio.sleep(interval)
