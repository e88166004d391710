"""The worker thread that writes restart points (restart_points.py) off the event loop.

Index checkpoints and periodic producer snapshots opened, wrote and closed their files on the
event loop: ~980 opens per 250 MB produced, up to 4.6 ms each on a loaded VM, with every Produce
waiting behind them. Now the loop takes what to write (the index entries the file lacks, the
snapshot's bytes: the state as of that append, owned by the loop) and queues it; one thread
writes the jobs in the order they were queued, so a partition's later checkpoint never lands
before an earlier one.

Whatever else writes or removes those files deals with the partition's queued jobs first, on
the loop: a roll (which seals the indexes and writes a durable snapshot) and a clean close
``settle`` them (the job running is waited for, the queued ones run right there, in order: what
the loop did before, for one or two jobs); deleting a partition ``discard``s them, so no write
recreates a file in a removed directory or under a topic created again with the same name. A
job that fails has gone through the disk layer (disk.py: the data directory shown failing, once)
and reports to the loop (``on_failure``), which only ever makes a later restart point do more:
the next start walks or replays more, never trusts less than what is on disk.

One thread for the whole broker: it holds one or two descriptors at a time, so the open-file
budget (open_files.py) does not grow with the partitions. The thread is woken through a
``queue.SimpleQueue`` (C, no Python lock on the loop's side): with a ``threading.Condition`` the
loop's ``notify`` under a lock the thread also takes convoyed on a loaded 2-core VM (a checkpoint's
queueing cost 5-8 ms at p99 instead of 0.3 ms). Each of the thread's syscalls hands the GIL back
and forth with the loop, so a job still costs the loop a little when the loop is busy: measured
(bench/append_costs.py) the index checkpoints cost a saturated loop about what writing them on it
did, while snapshots (a rename, a directory listing, fsyncs) cost it 3-13 ms per 100 MB instead
of 23-148; with the loop idle between requests the thread's writes cost it nothing. A kill -9 loses the queued jobs, as
it lost the unwritten work before: restart points are never needed for correctness.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable

from weir.protocol.errors import Errors, KafkaError

log = logging.getLogger(__name__)

Work = Callable[[], None]
OnFailure = Callable[[KafkaError], None]


class Job:
    __slots__ = ("owner", "work", "on_failure", "loop")

    def __init__(self, owner: object, work: Work, on_failure: OnFailure | None,
                 loop: asyncio.AbstractEventLoop | None):
        self.owner = owner
        self.work = work
        self.on_failure = on_failure
        self.loop = loop  # where on_failure runs


class RestartPointWriter:
    """A FIFO of file jobs and the one thread that runs them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._finished = threading.Condition(self._lock)
        self._queue: deque[Job] = deque()
        self._running: Job | None = None
        self._thread: threading.Thread | None = None

    def submit(self, owner: object, work: Work, on_failure: OnFailure | None = None) -> None:
        """Queue ``work`` (pure file I/O: it reads nothing the loop changes) behind every job
        queued before; without a running event loop (tools) it runs here and now."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        job = Job(owner, work, on_failure, loop)
        if loop is None:
            self.settle(owner)  # behind whatever the owner queued from a loop
            _run(job, report=_call)
            return
        with self._lock:
            self._queue.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="weir-restart-points", daemon=True)
                self._thread.start()
        self._wake.put(None)  # C-level, outside the lock: the loop never waits on the thread here

    def settle(self, owner: object) -> None:
        """Before the caller writes or reads ``owner``'s files itself: its running job finished,
        its queued ones run here, in the order queued."""
        for job in self._take(owner):
            _run(job, report=_call)

    def discard(self, owner: object) -> None:
        """Drop ``owner``'s queued jobs (its files are going away), once its running one is done."""
        self._take(owner)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every queued job has run (a clean shutdown, from a worker thread; tests)."""
        with self._lock:
            return self._finished.wait_for(lambda: not self._queue and self._running is None, timeout)

    def _take(self, owner: object) -> list[Job]:
        with self._lock:
            self._finished.wait_for(lambda: self._running is None or self._running.owner is not owner)
            taken = [job for job in self._queue if job.owner is owner]
            if taken:
                self._queue = deque(job for job in self._queue if job.owner is not owner)
        return taken

    def _serve(self) -> None:
        while True:
            self._wake.get()  # one per job queued; a job settled or discarded meanwhile leaves a spare
            with self._lock:
                if not self._queue:
                    continue
                job = self._running = self._queue.popleft()
            try:
                _run(job, report=_call_on_loop)
            finally:
                with self._lock:
                    self._running = None
                    self._finished.notify_all()


def _run(job: Job, report: Callable[[Job, KafkaError], None]) -> None:
    try:
        job.work()
    except KafkaError as exc:  # the disk layer logged it and marked the directory
        if job.on_failure is not None:
            report(job, exc)
    except Exception as exc:  # noqa: BLE001 - a bug must not stop the thread; the loop hears of it
        log.exception("restart point write failed")
        if job.on_failure is not None:
            report(job, KafkaError(Errors.KAFKA_STORAGE_ERROR, f"restart point write failed: {exc}"))


def _call(job: Job, exc: KafkaError) -> None:
    assert job.on_failure is not None
    job.on_failure(exc)


def _call_on_loop(job: Job, exc: KafkaError) -> None:
    assert job.on_failure is not None and job.loop is not None
    try:
        job.loop.call_soon_threadsafe(job.on_failure, exc)
    except RuntimeError:  # the loop is closed (a test's asyncio.run): nothing is left to redo it
        log.debug("restart point failure not reported: its event loop is closed (%s)", exc.message)


WRITER = RestartPointWriter()  # the broker's one writer (one thread, whatever the partitions)
