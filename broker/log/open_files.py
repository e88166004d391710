"""The broker's budget of open segment files, and what running out of descriptors answers.

A process has RLIMIT_NOFILE descriptors for everything: client connections,
segment files, snapshots being written. A segment opens its ``.log`` file on
first use; ``SegmentFiles`` keeps the open ones in least-recently-used order
and closes the oldest once more than ``weir.max.open.segment.files`` are open,
so a broker with many idle partitions holds few descriptors while the busy
ones keep theirs (no open or close per append or fetch). A segment handed to a
worker thread (a large write, an fsync) is pinned and never closed under it.
Indexes live in memory and need no descriptor (see index.py).
"""

from __future__ import annotations

import logging
import resource
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .segment import Segment

log = logging.getLogger(__name__)

# Unset weir.max.open.segment.files: half the process's descriptors, the other half left to
# connections and transient files; capped because beyond the busy working set more open
# files only cost kernel memory (reopening an idle segment costs one open()).
DEFAULT_SHARE = 2
DEFAULT_CAP = 16384


def default_open_files_limit() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return DEFAULT_CAP
    return max(1, min(soft // DEFAULT_SHARE, DEFAULT_CAP))


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit (what operators expect); (soft, hard) now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            log.info("open files limit: soft %s raised to the hard limit %s", _show(soft), _show(hard))
            return hard, hard
        except (ValueError, OSError) as exc:
            log.warning("open files limit: could not raise soft %s to hard %s: %s", _show(soft), _show(hard), exc)
            return soft, hard
    log.info("open files limit: soft %s, hard %s", _show(soft), _show(hard))
    return soft, hard


def _show(limit: int) -> str:
    return "unlimited" if limit == resource.RLIM_INFINITY else str(limit)


class SegmentFiles:
    """Open segment files across the broker, least recently used first."""

    def __init__(self, limit: int):
        self.limit = limit
        self._open: OrderedDict[Segment, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def opened(self, segment: Segment) -> None:
        """``segment`` just opened its file: count it, close the least recently used over the limit."""
        self._open[segment] = None
        if len(self._open) > self.limit:
            self._close_idle(len(self._open) - self.limit, keep=segment)

    def used(self, segment: Segment) -> None:
        self._open.move_to_end(segment)

    def unpinned(self, segment: Segment) -> None:
        """A pinned segment was skipped while the budget was over: close what is over it now."""
        if len(self._open) > self.limit:
            self._close_idle(len(self._open) - self.limit, keep=None)

    def closed(self, segment: Segment) -> None:
        self._open.pop(segment, None)

    def _close_idle(self, count: int, keep: Segment | None) -> None:
        victims = []
        for segment in self._open:
            if segment is not keep and not segment.pinned:
                victims.append(segment)
                if len(victims) == count:
                    break
        # Pinned segments (in a worker thread) may keep the count above the limit briefly.
        for segment in victims:
            segment.release()
