"""Where a compaction pass runs: a child process of the broker, so that it does not stall
the event loop.

A pass is CPU-bound Python (decoding every record of the dirty range, rebuilding
batches). Run in a worker thread it shares the GIL with the event loop, and a 1 ms
timer on the loop fired up to 100-150 ms late while it ran on a loaded 2-core
machine, however often the thread offered the GIL back: the loop, once woken,
waits for the GIL and then for the OS to schedule it again. In a process of its
own the pass competes with the loop only for a CPU, and at a lower priority
(niceness 10: where they share a CPU the scheduler prefers the broker). Measured
by ``bench/cleaner_stall.py``: the loop's lag while compacting is then that of
the idle loop on the same machine.

One child serves every pass of the broker, one pass at a time. It is started
with the first pass (``python -m weir.broker.log.cleaner_process``: it imports
only the compactor, not the broker) and talks over a socket pair: the broker
sends the plan, then the pinned segments' descriptors (SCM_RIGHTS, so a segment
deleted meanwhile, by DeleteRecords, is still read whole), and gets back the
result or the exception the pass raised. An abort (the broker stopping, the
topic going) is a message the child polls for between batches. The child exits
when the broker's end of the socket closes, which a kill -9 of the broker does
too; a pass it was running then only leaves ``.cleaned`` files, which the next
start-up deletes. A child that died is started again for the next pass.

``in_thread`` runs the same pass in the calling worker thread; the tests that
inject faults into the pass (monkeypatching it in this process) use it.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.reduction import recvfds, sendfds

from .compactor import CleaningAborted, CleaningPlan, CleaningResult, Compactor, StopSignal

log = logging.getLogger(__name__)

#: Runs one pass, blocking, in a worker thread of the broker; ``abort`` is set from the loop.
PassRunner = Callable[[CleaningPlan, threading.Event], CleaningResult]

ABORT = "abort"
ABORT_POLL_S = 0.01  # how often the broker's waiting thread looks at the abort event
CHILD_NICENESS = 10
CHILD_ABORT_CHECK_S = 0.001  # how often the child looks for an abort message between batches


def in_thread(plan: CleaningPlan, abort: threading.Event) -> CleaningResult:
    return Compactor(plan, abort).run()


def in_child_process(plan: CleaningPlan, abort: threading.Event) -> CleaningResult:
    return _CHILD.run(plan, abort)


class CleanerChild:
    """The broker's end: starts the child on demand and runs passes in it, one at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self._socket: socket.socket | None = None

    def run(self, plan: CleaningPlan, abort: threading.Event) -> CleaningResult:
        with self._lock:
            if abort.is_set():
                raise CleaningAborted()
            connection, sock = self._started()
            try:
                connection.send(plan)
                sendfds(sock, [segment.fd for segment in plan.segments])
                aborting = False
                while not connection.poll(ABORT_POLL_S):
                    if abort.is_set() and not aborting:
                        connection.send(ABORT)
                        aborting = True
                outcome = connection.recv()
            except (OSError, EOFError) as exc:  # the child died: start a new one for the next pass
                self._discard()
                raise OSError(f"the log cleaner's child process failed: {exc!r}") from exc
        if isinstance(outcome, BaseException):
            raise outcome
        if not isinstance(outcome, CleaningResult):
            raise TypeError(f"the log cleaner's child process answered {outcome!r}")
        return outcome

    def _started(self) -> tuple[Connection, socket.socket]:
        if self._process is not None and self._process.poll() is None \
                and self._connection is not None and self._socket is not None:
            return self._connection, self._socket
        self._discard()
        ours, theirs = socket.socketpair()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(theirs.fileno())], pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL, start_new_session=True)  # the terminal's ^C is the broker's to handle
        finally:
            theirs.close()
        self._socket = ours
        self._connection = Connection(os.dup(ours.fileno()))
        return self._connection, self._socket

    def _discard(self) -> None:
        if self._connection is not None:
            self._connection.close()
        if self._socket is not None:
            self._socket.close()
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
        self._process = self._connection = self._socket = None


_CHILD = CleanerChild()


# --------------------------------------------------------------------------- the child


class _AbortMessage:
    """The child's stop signal: an abort message waiting on the socket, or the broker gone."""

    def __init__(self, connection: Connection, parent: int):
        self._connection = connection
        self._parent = parent
        self._checked = 0.0
        self.aborted = False

    def is_set(self) -> bool:
        if self.aborted:
            return True
        now = time.monotonic()
        if now - self._checked < CHILD_ABORT_CHECK_S:
            return False
        self._checked = now
        self.aborted = os.getppid() != self._parent or self._connection.poll(0)
        return self.aborted


def _serve(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    connection = Connection(os.dup(fd))
    parent = os.getppid()
    while True:
        try:
            plan = connection.recv()
        except EOFError:
            return  # the broker closed its end, or died
        if plan == ABORT:
            continue  # meant for a pass that had finished already
        fds = recvfds(sock, len(plan.segments))
        for segment, received in zip(plan.segments, fds, strict=True):
            segment.fd = received
        stop: StopSignal = _AbortMessage(connection, parent)
        try:
            outcome: object = Compactor(plan, stop).run()
        except BaseException as exc:  # the broker decides what a failed pass means
            outcome = _portable(exc)
        finally:
            for received in fds:
                os.close(received)
        try:
            connection.send(outcome)
        except (OSError, EOFError):
            return


def _portable(exc: BaseException) -> BaseException:
    """The exception itself if it survives pickling (OSError, CleaningAborted do), else its repr."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"log cleaner pass failed: {exc!r}")


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Background work: where it shares a CPU with the broker, the scheduler prefers the broker.
    os.nice(CHILD_NICENESS)
    _serve(int(sys.argv[1]))
