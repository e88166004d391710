"""Size-prefixed framing: int32 length, then that many bytes.

The length is checked against the configured maximum before any buffer for the
frame is allocated, so an absurd or negative size costs four bytes of memory.
"""

from __future__ import annotations

from . import primitives as p


class FrameError(p.DecodeError):
    """The peer sent a frame size we refuse; the connection must close."""


class FrameReader:
    def __init__(self, max_frame_size: int):
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._need = -1  # size of the frame being assembled, -1 while reading its length

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def feed(self, data) -> list[bytes]:
        """Add received bytes; return every frame they complete, in order."""
        buffer = self._buffer
        buffer += data
        frames = []
        while True:
            if self._need < 0:
                if len(buffer) < 4:
                    return frames
                size = p.INT32.unpack_from(buffer, 0)[0]
                if size < 0 or size > self.max_frame_size:
                    raise FrameError(f"frame size {size} outside [0, {self.max_frame_size}]")
                self._need = size
            end = 4 + self._need
            if len(buffer) < end:
                return frames
            frames.append(bytes(buffer[4:end]))
            del buffer[:end]
            self._need = -1


def frame(payload: bytes | bytearray) -> bytes:
    return p.INT32.pack(len(payload)) + payload
