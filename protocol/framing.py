"""Size-prefixed framing: int32 length, then that many bytes.

The length is checked against the configured maximum before any buffer for the
frame is allocated, so an absurd or negative size costs four bytes of memory.
"""

from __future__ import annotations

from . import primitives as p


class FrameError(p.DecodeError):
    """The peer sent a frame size we refuse; the connection must close."""


class FrameReader:
    """Cuts a byte stream into frames with as few copies as the stream allows.

    A frame that arrives inside one ``feed`` is returned as a zero-copy view of
    that data. A frame spread over several feeds is accumulated in one
    bytearray that grows with the bytes actually received (never with the
    size the peer announced), so a peer trickling a byte at a time costs about
    a byte per byte, not an object per read.
    """

    def __init__(self, max_frame_size: int):
        self.max_frame_size = max_frame_size
        self._head = b""  # a length prefix split across feeds
        self._partial: bytearray | None = None  # the frame being assembled across feeds
        self._need = -1  # size of the frame being assembled, -1 while reading its length

    @property
    def buffered(self) -> int:
        return len(self._head) + (len(self._partial) if self._partial is not None else 0)

    def feed(self, data) -> list:
        """Add received bytes; return every frame they complete (bytes-like), in order."""
        view = memoryview(data)
        pos, end = 0, len(view)
        frames = []
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
            partial = self._partial
            missing = self._need - (len(partial) if partial is not None else 0)
            if end - pos < missing:
                if end > pos:
                    # Copied, not viewed: a view would pin the whole received chunk.
                    if partial is None:
                        self._partial = bytearray(view[pos:end])
                    else:
                        partial += view[pos:end]
                return frames
            if partial is not None:
                partial += view[pos:pos + missing]
                frames.append(partial)
                self._partial = None
            else:
                frames.append(view[pos:pos + missing])
            pos += missing
            self._need = -1


def frame(payload: bytes | bytearray) -> bytes:
    return p.INT32.pack(len(payload)) + payload
