"""Record-batch compression codecs: gzip, snappy (xerial framing), lz4 (frame), zstd.

The broker decompresses each produced batch to validate its records, and
recompresses it when the topic's ``compression.type`` names another codec
(``broker/log/validator.py``); our client, the tests and ListOffsets-by-timestamp
use this module too.
"""

from __future__ import annotations

import enum
import mmap
import struct
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeAlias

import cramjam

if TYPE_CHECKING:
    from typing_extensions import Buffer

    #: A cramjam ``decompress_into``: (input, output buffer) to the count of bytes written.
    DecompressInto: TypeAlias = Callable[[Buffer, memoryview | mmap.mmap], int]


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# Java's snappy-java stream format, which Kafka clients write and read.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_BLOCK_LEN = struct.Struct(">i")


def compress(codec: Compression, data: Buffer, level: int | None = None) -> bytes:
    """``level``: gzip 1-9 (-1 or None: zlib's default), lz4 1-17, zstd -131072..22; snappy has none."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data, level=None if level == -1 else level))
    if codec == Compression.SNAPPY:
        out = bytearray(_XERIAL_HEADER)
        view = memoryview(data)
        for start in range(0, len(view), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(view[start:start + _XERIAL_BLOCK]))
            out += _BLOCK_LEN.pack(len(block))
            out += block
        return bytes(out)
    if codec == Compression.LZ4:
        # Kafka's Java reader (Lz4BlockInputStream) refuses linked blocks ("Dependent block stream
        # is unsupported"), which cramjam writes; its own writer makes independent 64 KiB blocks
        # with no content size or checksum, so we write exactly that frame. (Imported here: only
        # an lz4 producer needs it, and ``import weir.client`` stays quick.)
        import lz4.frame
        compressed: bytes = lz4.frame.compress(data, compression_level=level or 0,
                                               block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                               content_checksum=False, store_size=False)
        return compressed
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=level))
    raise ValueError(f"unknown compression codec {codec}")


class DecompressedTooLarge(ValueError):
    """A payload that would decompress past the caller's ``max_size``."""


def decompress(codec: Compression, data: Buffer, max_size: int | None = None) -> bytes:
    """The payload decompressed; with ``max_size``, DecompressedTooLarge instead of more bytes than that,
    found without ever holding more (a few compressed megabytes can expand to gigabytes)."""
    if max_size is not None and codec != Compression.NONE:
        return _decompress_bounded(codec, data, max_size)
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.decompress(data))
    if codec == Compression.SNAPPY:
        data = bytes(data)
        if not data.startswith(_XERIAL_MAGIC):
            return bytes(cramjam.snappy.decompress_raw(data))
        out = bytearray()
        for block in _xerial_blocks(data):
            out += cramjam.snappy.decompress_raw(block)
        return bytes(out)
    if codec == Compression.LZ4:
        return bytes(cramjam.lz4.decompress(data))
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.decompress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _xerial_blocks(data: bytes) -> Iterator[bytes]:
    pos = len(_XERIAL_HEADER)
    while pos < len(data):
        (size,) = _BLOCK_LEN.unpack_from(data, pos)
        pos += 4
        yield data[pos:pos + size]
        pos += size


# Bounded decompression writes into a buffer one byte larger than the bound: the codec fails when
# the output does not fit, and filling that last byte means the bound is passed. Every payload is
# first tried in a per-thread scratch buffer that stays mapped; one larger than that, under a larger
# bound, gets a fresh anonymous mapping, whose pages the kernel provides only as the output reaches them.
_SCRATCH_BYTES = 8 << 20
_DOES_NOT_FIT = "failed to write whole buffer"  # cramjam's error when the output buffer is full
_INTO: dict[Compression, DecompressInto] = {
    Compression.GZIP: cramjam.gzip.decompress_into, Compression.LZ4: cramjam.lz4.decompress_into,
    Compression.ZSTD: cramjam.zstd.decompress_into}


class _Scratch(threading.local):
    buffer: mmap.mmap | None = None


_scratch = _Scratch()


def _decompress_bounded(codec: Compression, data: Buffer, max_size: int) -> bytes:
    if codec == Compression.SNAPPY:  # every snappy block states its length first: no need to try
        data = bytes(data)
        blocks = list(_xerial_blocks(data)) if data.startswith(_XERIAL_MAGIC) else [data]
        if sum(_snappy_length(block) for block in blocks) > max_size:
            raise DecompressedTooLarge(f"snappy payload decompresses past {max_size} bytes")
        return b"".join(bytes(cramjam.snappy.decompress_raw(block)) for block in blocks)
    into = _INTO.get(codec)
    if into is None:
        raise ValueError(f"unknown compression codec {codec}")
    if _scratch.buffer is None:
        _scratch.buffer = mmap.mmap(-1, _SCRATCH_BYTES)
    first_try = min(max_size, _SCRATCH_BYTES - 1)
    try:  # the scratch's pages are resident: no page faults, no mapping per call
        return _decompress_into(into, data, memoryview(_scratch.buffer)[:first_try + 1], codec, first_try)
    except DecompressedTooLarge:
        if first_try == max_size:
            raise
    # Past the scratch (rare: several MiB decompressed) the payload is decompressed a second time.
    with mmap.mmap(-1, max_size + 1) as target:
        return _decompress_into(into, data, target, codec, max_size)


def _decompress_into(into: DecompressInto, data: Buffer, target: memoryview | mmap.mmap, codec: Compression,
                     max_size: int) -> bytes:
    try:
        size = into(data, target)
    except cramjam.DecompressionError as exc:
        if _DOES_NOT_FIT in str(exc):
            raise DecompressedTooLarge(f"{codec.name} payload decompresses past {max_size} bytes") from None
        raise
    if size > max_size:
        raise DecompressedTooLarge(f"{codec.name} payload decompresses past {max_size} bytes")
    return target[:size] if isinstance(target, mmap.mmap) else bytes(target[:size])


def _snappy_length(block: bytes) -> int:
    """The uncompressed length a raw snappy block starts with (a little-endian base-128 varint)."""
    length = shift = 0
    for i in range(min(len(block), 5)):
        byte = block[i]
        length |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return length
        shift += 7
    raise ValueError("snappy block with no valid length")
