"""Record-batch compression codecs: gzip, snappy (xerial framing), lz4 (frame), zstd.

The broker decompresses each produced batch to validate its records, and
recompresses it when the topic's ``compression.type`` names another codec
(``broker/log/validator.py``); our client, the tests and ListOffsets-by-timestamp
use this module too.
"""

from __future__ import annotations

import enum
import struct

import cramjam
import lz4.frame


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


def compress(codec: Compression, data: bytes, level: int | None = None) -> bytes:
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
        # with no content size or checksum, so we write exactly that frame.
        return lz4.frame.compress(data, compression_level=level or 0, block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                                  block_linked=False, content_checksum=False, store_size=False)
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=level))
    raise ValueError(f"unknown compression codec {codec}")


def decompress(codec: Compression, data) -> bytes:
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.decompress(data))
    if codec == Compression.SNAPPY:
        data = bytes(data)
        if not data.startswith(_XERIAL_MAGIC):
            return bytes(cramjam.snappy.decompress_raw(data))
        out = bytearray()
        pos = len(_XERIAL_HEADER)
        while pos < len(data):
            (size,) = _BLOCK_LEN.unpack_from(data, pos)
            pos += 4
            out += cramjam.snappy.decompress_raw(data[pos:pos + size])
            pos += size
        return bytes(out)
    if codec == Compression.LZ4:
        return bytes(cramjam.lz4.decompress(data))
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.decompress(data))
    raise ValueError(f"unknown compression codec {codec}")
