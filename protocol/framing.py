"""Size-prefixed framing: int32 length, then that many bytes.

The length is checked against the configured maximum before any buffer for the
frame is allocated, so an absurd or negative size costs four bytes of memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from . import primitives as p

if TYPE_CHECKING:
    from typing_extensions import Buffer

#: A frame as ``FrameReader.feed`` returns it: a view of the data fed, or the frame joined.
Frame: TypeAlias = memoryview | bytearray | bytes


class FrameError(p.DecodeError):
    """The peer sent a frame size we refuse; the connection must close."""


#: A piece of a frame at least this big (and at least half of the chunk it came in) is kept as a
#: view while its frame is assembled; a smaller piece is copied into a bytearray, so that a peer
#: trickling bytes costs about a byte per byte and not a view (~200 bytes) per read.
MIN_KEPT_VIEW = 4096


class FrameReader:
    """Cuts a byte stream into frames with as few copies as the stream allows.

    A frame that arrives inside one ``feed`` is returned as a zero-copy view of
    that data. A frame spread over several feeds is joined once at its end;
    meanwhile pieces of ``MIN_KEPT_VIEW`` bytes or more that are at least half
    of their chunk are kept as views, and anything else (small reads, a small
    tail of a chunk that held earlier frames) is copied into a bytearray.
    Memory grows only with the bytes actually received (at most about twice
    them), never with the size the peer announced.
    """

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self._head = b""  # a length prefix split across feeds
        # pieces of the frame being assembled: views of whole chunks, bytearrays
        self._parts: list[memoryview | bytearray] = []
        self._have = 0
        self._need = -1  # size of the frame being assembled, -1 while reading its length

    @property
    def buffered(self) -> int:
        return len(self._head) + self._have

    def feed(self, data: Buffer) -> list[Frame]:
        """Add received bytes; return every frame they complete (bytes-like), in order."""
        view = memoryview(data)
        pos, end = 0, len(view)
        frames: list[Frame] = []
        while True:
            if self._need < 0:
                missing = 4 - len(self._head)
                if end - pos < missing:
                    self._head += bytes(view[pos:end])
                    return frames
                head = self._head + bytes(view[pos:pos + missing]) if self._head else view[pos:pos + 4]
                pos += missing
                self._head = b""
                size = p.INT32.unpack(head)[0]
                if size < 0 or size > self.max_frame_size:
                    raise FrameError(f"frame size {size} outside [0, {self.max_frame_size}]")
                self._need = size
            missing = self._need - self._have
            if end - pos < missing:
                if end > pos:
                    self._keep(view, pos, end)
                return frames
            piece = view[pos:pos + missing]
            pos += missing
            parts = self._parts
            if not parts:
                frames.append(piece)  # arrived whole: no copy
            else:
                if len(parts) == 1 and type(parts[0]) is bytearray:
                    parts[0] += piece
                    frames.append(parts[0])
                else:
                    parts.append(piece)
                    frames.append(b"".join(parts))
                self._parts, self._have = [], 0
            self._need = -1

    def _keep(self, view: memoryview, pos: int, end: int) -> None:
        parts = self._parts
        size = end - pos
        if size >= MIN_KEPT_VIEW and 2 * size >= len(view):
            parts.append(view[pos:end])  # no copy; it pins at most twice its own size of the chunk
        elif parts and type(parts[-1]) is bytearray:
            parts[-1] += view[pos:end]
        else:
            parts.append(bytearray(view[pos:end]))
        self._have += size


def frame(payload: bytes | bytearray) -> bytes:
    return p.INT32.pack(len(payload)) + payload
