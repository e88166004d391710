"""A FUSE filesystem that loses what was not fsynced when the test cuts the power.

In the manner of Jepsen's LazyFS: every file and directory lives in this process's memory
twice, as the kernel's page cache would hold it (what reads see) and as the disk holds it
(what survives). ``fsync`` of a file makes its contents durable; ``fsync`` of a directory
makes its entries durable (a created, renamed or removed name), as POSIX asks and as ext4
does not always forgive: a new file whose directory was never fsynced is gone after a cut.

A cut (``cut`` on the control channel, sent after the broker was killed) puts every
directory back to its durable entries and every file to its durable contents plus a random
prefix of the writes made since its last fsync, the last of them torn at a random byte: the
kernel may have written some dirty pages back before the power went, in order. Likewise a
directory's unsynced entries may all have reached the disk (a journal commit), on a coin
toss per directory. With seed 0 nothing unsynced survives.

Run as ``python -m tests.support.lazyfs MOUNTPOINT`` (root, /dev/fuse, libfuse3 from the
fuse3 package via mfusepy's ctypes binding); it prints ``ready`` once mounted and then
reads commands on stdin, one per line, answering one JSON line each:

- ``cut SEED``: the power cut above; answers the counts of writes kept and dropped;
- ``stats``: fsyncs of files and directories so far;
- ``slow MS``: from now on every write and fsync takes MS milliseconds more (a slow disk; 0 ends it).

The kernel keeps no cache of its own: every file is opened with direct_io and attributes
and names expire at once, so what the broker reads after a cut is this process's state.
"""

from __future__ import annotations

import errno
import json
import os
import random
import stat
import sys
import threading
import time

import mfusepy as fuse


class Node:
    def __init__(self, mode: int):
        self.mode = mode
        self.mtime = time.time()


class File(Node):
    def __init__(self, mode: int):
        super().__init__(stat.S_IFREG | (mode & 0o7777))
        self.data = bytearray()  # what reads see
        self.durable = bytearray()  # what survives a cut
        self.unsynced: list[tuple[str, int, bytes]] = []  # ("write", offset, bytes) / ("truncate", size, b"")

    def sync(self) -> None:
        if self.unsynced:
            self.durable = bytearray(self.data)
            self.unsynced = []

    def cut(self, rng: random.Random | None) -> tuple[int, int]:
        """Back to the durable contents plus a random prefix of the unsynced writes; (kept, dropped)."""
        pending, self.unsynced = self.unsynced, []
        kept = rng.randint(0, len(pending)) if rng is not None and pending else 0
        data = self.durable
        for kind, where, chunk in pending[:kept]:
            if kind == "truncate":
                _resize(data, where)
            else:
                _write_into(data, where, chunk)
        if rng is not None and kept < len(pending):  # the write the power cut in the middle of
            kind, where, chunk = pending[kept]
            if kind == "write":
                _write_into(data, where, chunk[:rng.randint(0, len(chunk))])
        self.data = bytearray(data)
        self.durable = data
        return kept, len(pending) - kept


class Directory(Node):
    def __init__(self, mode: int):
        super().__init__(stat.S_IFDIR | (mode & 0o7777))
        self.entries: dict[str, Node] = {}
        self.durable: dict[str, Node] = {}

    def sync(self) -> None:
        self.durable = dict(self.entries)


def _resize(data: bytearray, size: int) -> None:
    if size < len(data):
        del data[size:]
    else:
        data.extend(bytes(size - len(data)))


def _write_into(data: bytearray, offset: int, chunk: bytes) -> None:
    if offset > len(data):
        data.extend(bytes(offset - len(data)))
    data[offset:offset + len(chunk)] = chunk


class LazyFS(fuse.Operations):
    use_ns = True  # utimens in nanoseconds (it changes nothing here)

    def __init__(self):
        self.mutex = threading.Lock()  # FUSE requests against the control channel
        self.root = Directory(0o755)
        self.root.durable = {}
        self.handles: dict[int, Node] = {}
        self.next_handle = 1
        self.file_fsyncs = 0
        self.directory_fsyncs = 0
        self.latency_s = 0.0  # ``slow``: added to each write and fsync, under the mutex as a device queues

    # ------------------------------------------------------------ paths

    def _lookup(self, path: str) -> Node:
        node: Node = self.root
        for name in filter(None, path.split("/")):
            if not isinstance(node, Directory) or name not in node.entries:
                raise fuse.FuseOSError(errno.ENOENT)
            node = node.entries[name]
        return node

    def _parent(self, path: str) -> tuple[Directory, str]:
        head, name = path.rstrip("/").rsplit("/", 1)
        parent = self._lookup(head or "/")
        if not isinstance(parent, Directory):
            raise fuse.FuseOSError(errno.ENOTDIR)
        return parent, name

    def _handle(self, node: Node) -> int:
        handle = self.next_handle
        self.next_handle += 1
        self.handles[handle] = node
        return handle

    def _file(self, path: str, fh) -> File:
        node = self.handles.get(fh) if fh else None
        if node is None:
            node = self._lookup(path)
        if not isinstance(node, File):
            raise fuse.FuseOSError(errno.EISDIR)
        return node

    # ------------------------------------------------------------ operations

    def init(self, path):
        print("ready", flush=True)  # the kernel has the mount
        threading.Thread(target=_control, args=(self,), daemon=True).start()

    def getattr(self, path, fh=None):
        with self.mutex:
            node = self.handles.get(fh) if fh else None
            if node is None:
                node = self._lookup(path)
            size = len(node.data) if isinstance(node, File) else 4096
            return {"st_mode": node.mode, "st_nlink": 2 if isinstance(node, Directory) else 1,
                    "st_size": size, "st_blocks": (size + 511) // 512, "st_blksize": 4096,
                    "st_uid": os.getuid(), "st_gid": os.getgid(),
                    "st_atime": node.mtime, "st_mtime": node.mtime, "st_ctime": node.mtime}

    def readdir(self, path, fh):
        with self.mutex:
            node = self._lookup(path)
            if not isinstance(node, Directory):
                raise fuse.FuseOSError(errno.ENOTDIR)
            return [".", "..", *node.entries]

    def mkdir(self, path, mode):
        with self.mutex:
            parent, name = self._parent(path)
            if name in parent.entries:
                raise fuse.FuseOSError(errno.EEXIST)
            parent.entries[name] = Directory(mode)
            return 0

    def rmdir(self, path):
        with self.mutex:
            parent, name = self._parent(path)
            node = parent.entries.get(name)
            if not isinstance(node, Directory):
                raise fuse.FuseOSError(errno.ENOTDIR if node else errno.ENOENT)
            if node.entries:
                raise fuse.FuseOSError(errno.ENOTEMPTY)
            del parent.entries[name]
            return 0

    def create(self, path, mode, flags=0):
        with self.mutex:
            parent, name = self._parent(path)
            node = parent.entries.get(name)
            if node is None:
                node = parent.entries[name] = File(mode)
            elif flags & os.O_TRUNC:
                self._truncate_open(node)
            return self._handle(node)

    def open(self, path, flags):
        # libfuse3 leaves O_TRUNC to the filesystem (atomic_o_trunc): an open that asks for it empties
        # the file here, as an unsynced truncation a power cut may undo
        with self.mutex:
            node = self._lookup(path)
            if flags & os.O_TRUNC and isinstance(node, File):
                self._truncate_open(node)
            return self._handle(node)

    @staticmethod
    def _truncate_open(node: File) -> None:
        _resize(node.data, 0)
        node.unsynced.append(("truncate", 0, b""))
        node.mtime = time.time()

    def opendir(self, path):
        with self.mutex:
            return self._handle(self._lookup(path))

    def release(self, path, fh):
        with self.mutex:
            self.handles.pop(fh, None)
            return 0

    releasedir = release

    def read(self, path, size, offset, fh):
        with self.mutex:
            return bytes(self._file(path, fh).data[offset:offset + size])

    def write(self, path, data, offset, fh):
        with self.mutex:
            if self.latency_s:
                time.sleep(self.latency_s)
            node = self._file(path, fh)
            data = bytes(data)
            _write_into(node.data, offset, data)
            node.unsynced.append(("write", offset, data))
            node.mtime = time.time()
            return len(data)

    def truncate(self, path, length, fh=None):
        with self.mutex:
            node = self._file(path, fh)
            _resize(node.data, length)
            node.unsynced.append(("truncate", length, b""))
            return 0

    def unlink(self, path):
        with self.mutex:
            parent, name = self._parent(path)
            if name not in parent.entries:
                raise fuse.FuseOSError(errno.ENOENT)
            del parent.entries[name]
            return 0

    def rename(self, old, new):
        with self.mutex:
            old_parent, old_name = self._parent(old)
            new_parent, new_name = self._parent(new)
            node = old_parent.entries.get(old_name)
            if node is None:
                raise fuse.FuseOSError(errno.ENOENT)
            target = new_parent.entries.get(new_name)
            if isinstance(target, Directory) and target.entries:
                raise fuse.FuseOSError(errno.ENOTEMPTY)
            del old_parent.entries[old_name]
            new_parent.entries[new_name] = node
            return 0

    def fsync(self, path, datasync, fh):
        with self.mutex:
            if self.latency_s:
                time.sleep(self.latency_s)
            self._file(path, fh).sync()
            self.file_fsyncs += 1
            return 0

    def fsyncdir(self, path, datasync, fh):
        with self.mutex:
            node = self.handles.get(fh) if fh else None
            if node is None:
                node = self._lookup(path)
            if isinstance(node, Directory):
                node.sync()
            self.directory_fsyncs += 1
            return 0

    def flush(self, path, fh):
        return 0

    def chmod(self, path, mode):
        return 0

    def chown(self, path, uid, gid):
        return 0

    def utimens(self, path, times=None):
        return 0

    def statfs(self, path):
        return {"f_bsize": 4096, "f_frsize": 4096, "f_blocks": 1 << 20, "f_bfree": 1 << 19,
                "f_bavail": 1 << 19, "f_files": 1 << 20, "f_ffree": 1 << 19, "f_namemax": 255}

    # ------------------------------------------------------------ the power cut

    def cut(self, seed: int) -> dict[str, int]:
        """Every directory to its durable entries, every file to its durable contents (plus, with
        a seed, a random prefix of its unsynced writes); nodes no durable entry reaches are gone."""
        rng = random.Random(seed) if seed else None
        counts = {"files": 0, "writes_kept": 0, "writes_dropped": 0, "entries_dropped": 0}
        with self.mutex:
            stack = [self.root]
            while stack:
                directory = stack.pop()
                if rng is not None and rng.random() < 0.5:
                    directory.sync()
                counts["entries_dropped"] += len(set(directory.entries) ^ set(directory.durable))
                directory.entries = dict(directory.durable)
                for node in directory.entries.values():
                    if isinstance(node, Directory):
                        stack.append(node)
                    else:
                        kept, dropped = node.cut(rng)
                        counts["files"] += 1
                        counts["writes_kept"] += kept
                        counts["writes_dropped"] += dropped
            self.handles.clear()
        return counts


def _control(fs: LazyFS) -> None:
    for line in sys.stdin:
        command = line.split()
        if not command:
            continue
        if command[0] == "cut":
            answer = fs.cut(int(command[1]) if len(command) > 1 else 0)
        elif command[0] == "slow":
            fs.latency_s = int(command[1]) / 1000  # read without the mutex: a float swap is atomic
            answer = {"latency_ms": int(command[1])}
        elif command[0] == "stats":
            with fs.mutex:
                answer = {"file_fsyncs": fs.file_fsyncs, "directory_fsyncs": fs.directory_fsyncs}
        else:
            answer = {"error": f"unknown command {command[0]}"}
        print(json.dumps(answer), flush=True)


def main() -> None:
    mountpoint = sys.argv[1]
    fs = LazyFS()
    fuse.FUSE(fs, mountpoint, foreground=True, nothreads=True, direct_io=True, hard_remove=True,
              entry_timeout=0, attr_timeout=0, negative_timeout=0, fsname="lazyfs")


if __name__ == "__main__":
    main()
