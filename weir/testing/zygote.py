"""A warm start for broker child processes: a process that has imported the broker forks each one.

Most of a broker child's start-up is Python importing the broker (~0.25 s of ~570 modules on a quiet
2-core machine with bytecode, twice that when Python must compile our sources, more under load); a
test suite pays it again for every broker it starts and every restart. The zygote pays it once per
test process: ``ProcessBroker`` asks it for a child, it forks one that runs ``weir.broker``'s
``main`` with the given arguments, environment, working directory and standard streams, so the child
reaches its ready line in a few tens of milliseconds. Everything else about the child is as ``python
-m weir.broker`` would make it: its own pid, its stderr on the caller's pipe, kill -9 and SIGTERM,
its exit code.

What a fork cannot give, the caller falls back from (``Zygote.can_spawn``): a child whose
environment differs from the zygote's in what the broker reads at import time (``WEIR_*``) or
the interpreter reads at start (``PYTHON*``, ``LD_*``, the locale) is started the ordinary way.

Wire: one SOCK_SEQPACKET pair for requests (a JSON packet carrying the child's stdin, stdout,
stderr and a status socket as SCM_RIGHTS descriptors). On the status socket (one pair per child)
the zygote answers the pid with a pidfd (signals without the pid-reuse race), then the exit code
once it reaps the child. The zygote exits when the caller's end of the request socket closes.
"""

from __future__ import annotations

import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence

INHERITED_PREFIXES = ("WEIR_", "PYTHON", "LD_", "LC_", "LANG")  # read before a fork could change them
_MAX_PACKET = 1 << 20


def _matters(env: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in env.items() if name.startswith(INHERITED_PREFIXES)}


def environment_key(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """What a zygote's children inherit from its start: children of one key may share a zygote."""
    return tuple(sorted(_matters(env).items()))


class ForkedChild:
    """The part of ``subprocess.Popen`` our runners use, for a child the zygote forked."""

    def __init__(self, pid: int, pidfd: int, status: socket.socket, stderr: io.TextIOWrapper) -> None:
        self.pid = pid
        self.stderr = stderr
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._status = status
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        return self._await_exit(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._await_exit(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(["weir.broker"], timeout or 0)
        return code

    def _await_exit(self, timeout: float | None) -> int | None:
        with self._lock:
            if self.returncode is None and select.select([self._status], [], [], timeout)[0]:
                packet = self._status.recv(_MAX_PACKET)
                # an empty packet: the zygote itself died, and with it what it knew of the child
                self.returncode = json.loads(packet)["exit"] if packet else -signal.SIGKILL
                self._status.close()
                os.close(self._pidfd)
            return self.returncode

    def send_signal(self, sig: int) -> None:
        with self._lock:
            if self.returncode is None:
                try:
                    signal.pidfd_send_signal(self._pidfd, sig)
                except ProcessLookupError:  # exited and reaped; its code is on the status socket
                    pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class Zygote:
    """The caller's side: starts the zygote process and asks it for children."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._owner = os.getpid()
        self._requests = ours
        self._send_lock = threading.Lock()
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-c", f"from weir.testing.zygote import serve; serve({theirs.fileno()})"],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=self._env)
        theirs.close()

    def alive(self) -> bool:
        return self.process.poll() is None

    def can_spawn(self, env: Mapping[str, str]) -> bool:
        return os.getpid() == self._owner and self.alive() and _matters(env) == _matters(self._env)

    def spawn(self, argv: Sequence[str], env: Mapping[str, str], open_files_limit: int | None) -> ForkedChild:
        """A child running ``weir.broker`` with ``argv`` (its arguments after the module name);
        its stdin and stdout are /dev/null, its stderr a pipe read through ``ForkedChild.stderr``.
        OSError if the zygote is gone."""
        status_ours, status_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        read_end, write_end = os.pipe()
        null = os.open(os.devnull, os.O_RDWR)
        request = json.dumps({"argv": list(argv), "env": dict(env), "cwd": os.getcwd(),
                              "open_files_limit": open_files_limit}).encode()
        try:
            with self._send_lock:
                socket.send_fds(self._requests, [request], [null, null, write_end, status_theirs.fileno()])
            packet, fds, _flags, _address = socket.recv_fds(status_ours, _MAX_PACKET, 1)
            if not packet:
                raise ConnectionError("the broker zygote exited")
        except BaseException:
            status_ours.close()
            os.close(read_end)
            raise
        finally:
            status_theirs.close()
            os.close(write_end)
            os.close(null)
        stderr = io.TextIOWrapper(io.FileIO(read_end, "r"), encoding="utf-8", errors="replace")
        return ForkedChild(json.loads(packet)["pid"], fds[0], status_ours, stderr)

    def close(self) -> None:
        self._requests.close()  # the zygote exits on EOF
        self.process.wait()


# ---------------------------------------------------------------------- the zygote process

def serve(request_fd: int) -> None:
    """The zygote's loop: import the broker, then fork a child per request until the caller goes."""
    import weir.broker.__main__  # noqa: F401  (the point of the zygote: imported once, before any fork)

    requests = socket.socket(fileno=request_fd)
    wake_read, wake_write = socket.socketpair()
    wake_write.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wake-up fd hears of exits
    status_by_pid: dict[int, socket.socket] = {}
    while True:
        readable = select.select([requests, wake_read], [], [])[0]
        if wake_read in readable:
            wake_read.recv(4096)
            _reap(status_by_pid)
        if requests in readable:
            packet, fds, _flags, _address = socket.recv_fds(requests, _MAX_PACKET, 4)
            if not packet:
                return  # the caller closed its end (or died): its children are its to kill
            status = socket.socket(fileno=fds[3])
            pid = os.fork()
            if pid == 0:
                for open_socket in (requests, wake_read, wake_write, status, *status_by_pid.values()):
                    open_socket.close()
                _run_child(json.loads(packet), fds[:3])
            pidfd = os.pidfd_open(pid)  # before any reaping: it names this child, never a successor
            for fd in fds[:3]:
                os.close(fd)
            socket.send_fds(status, [json.dumps({"pid": pid}).encode()], [pidfd])
            os.close(pidfd)
            status_by_pid[pid] = status


def _reap(status_by_pid: dict[int, socket.socket]) -> None:
    while status_by_pid:
        pid, wait_status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        status = status_by_pid.pop(pid, None)
        if status is not None:
            try:
                status.send(json.dumps({"exit": os.waitstatus_to_exitcode(wait_status)}).encode())
            except OSError:  # the caller dropped the child's handle
                pass
            status.close()


def _run_child(request: dict, stdio: Sequence[int]) -> None:
    """In the forked child: become ``python -m weir.broker`` as the request describes; never returns."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    os.closerange(3, 1 << 16)  # nothing of the zygote's leaks into the broker
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout, sys.stderr = (io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8",
                                               errors="backslashreplace", line_buffering=True, write_through=True)
                              for fd in (1, 2))
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()  # TZ: the log's local times are the child's, as if it had started fresh
    os.chdir(request["cwd"])
    if request["open_files_limit"]:
        import resource
        limit = request["open_files_limit"]
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    sys.argv = ["weir", *request["argv"]]
    code = 1
    try:
        from weir.broker.__main__ import main
        code = main(request["argv"])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if not isinstance(exit_.code, int | None):
            print(exit_.code, file=sys.stderr)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        try:
            import atexit
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
