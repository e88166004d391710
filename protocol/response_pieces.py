"""A response encoded around its record bytes instead of through them (zero-copy fetch).

A Fetch response is mostly record batches that already sit in segment files.
Its ``records`` fields may hold a ``FileRegion`` (where the bytes are) instead
of the bytes. Encoded into ``ResponsePieces`` a region costs its length prefix
only: the encoder notes where the region goes and the connection later sends
the file range itself (``os.sendfile``), so the bytes go from the page cache
to the socket without passing through Python. Encoded into a plain
``bytearray`` (any other caller) a region is read and copied in, so the bytes
are the same either way.
"""

from __future__ import annotations

from collections.abc import Iterator


class FileRegion:
    """``length`` bytes at ``position`` of a file; subclasses say how the file is reached."""

    __slots__ = ("position", "length")

    def __init__(self, position: int, length: int) -> None:
        self.position = position
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __bool__(self) -> bool:
        return self.length > 0

    def read(self) -> bytes:
        """The bytes, read now (one pread)."""
        raise NotImplementedError

    def pin(self) -> int:
        """Keep the file open and unchanged under this region until ``unpin``; its descriptor."""
        raise NotImplementedError

    def unpin(self) -> None:
        raise NotImplementedError


class ResponsePieces(bytearray):
    """An encoded response whose file regions are not in the buffer.

    ``regions`` lists (index into this buffer, pinned region, descriptor) in order: the frame
    is this buffer's bytes with each region's bytes inserted at its index. Whoever sends it
    calls ``release`` once done (or abandoning it), which unpins the regions.
    """

    __slots__ = ("regions", "region_bytes")

    def __init__(self, size: int = 0) -> None:
        super().__init__(size)
        self.regions: list[tuple[int, FileRegion, int]] = []
        self.region_bytes = 0

    def add_region(self, region: FileRegion) -> None:
        fd = region.pin()
        self.regions.append((len(self), region, fd))
        self.region_bytes += region.length

    @property
    def frame_size(self) -> int:
        return len(self) + self.region_bytes

    def pieces(self) -> Iterator[memoryview | tuple[FileRegion, int]]:
        """The frame in order: memoryviews of this buffer and (region, descriptor) pairs."""
        view = memoryview(self)
        start = 0
        for at, region, fd in self.regions:
            if at > start:
                yield view[start:at]
            yield region, fd
            start = at
        if start < len(self):
            yield view[start:]

    def joined(self) -> bytes:
        """The whole frame as bytes (tests; and what a copying sender sends)."""
        out = bytearray()
        for piece in self.pieces():
            out += piece if isinstance(piece, memoryview) else piece[0].read()
        return bytes(out)

    def release(self) -> None:
        regions, self.regions = self.regions, []
        for _at, region, _fd in regions:
            region.unpin()


def write_records(out: bytearray, value: object) -> bool:
    """Put a records value that is a ``FileRegion`` into ``out`` (after its length prefix);
    False when ``value`` is plain bytes for the caller to copy in."""
    if not isinstance(value, FileRegion):
        return False
    if isinstance(out, ResponsePieces):
        out.add_region(value)
    else:
        out += value.read()
    return True
