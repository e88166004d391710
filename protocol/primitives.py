"""Kafka wire primitives: fixed-width integers, varints, strings, bytes, UUIDs.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; writers append to
a ``bytearray``. ``buf`` may be ``bytes`` or a ``memoryview``: byte fields come
back as zero-copy slices of it, which is what keeps record batches as bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, TypeAlias

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

ZERO_UUID = bytes(16)

#: Kafka 4.4's generated readers refuse a longer array, and more tagged fields in one section, as a
#: malformed message (a broker closes the connection), however large the frame.
MAX_ARRAY_ELEMENTS = 1_000_000
MAX_TAGGED_FIELDS = 10_000

#: What the readers take: received bytes, or a view of them.
ReadBuffer: TypeAlias = bytes | bytearray | memoryview
#: A reader: ``(buf, pos)`` to ``(value, new_pos)``; a writer appends ``value`` to ``out``. Their values
#: are Any: a field's Python type follows from its schema, which the checker does not see.
Reader: TypeAlias = Callable[[ReadBuffer, int], tuple[Any, int]]
Writer: TypeAlias = Callable[[bytearray, Any], None]


class DecodeError(ValueError):
    """The bytes do not form a valid message; the connection cannot continue."""


def read_uvarint(buf: ReadBuffer, pos: int) -> tuple[int, int]:
    if pos < len(buf):  # most are one byte (compact lengths, counts, tag counts): no loop
        byte = buf[pos]
        if byte < 0x80:
            return byte, pos + 1
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise DecodeError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError("unsigned varint cannot be negative")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varint(buf: ReadBuffer, pos: int) -> tuple[int, int]:
    """Zigzag varint (record fields); also used for varlongs."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    write_uvarint(out, (value << 1) ^ (value >> 63))


def zigzag_size(value: int) -> int:
    raw = (value << 1) ^ (value >> 63)
    size = 1
    while raw > 0x7F:
        raw >>= 7
        size += 1
    return size


def read_fixed(codec: struct.Struct) -> Reader:
    size = codec.size
    unpack = codec.unpack_from

    def read(buf: ReadBuffer, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise DecodeError(f"truncated: need {size} bytes at {pos}")
        return unpack(buf, pos)[0], pos + size

    return read


def write_fixed(codec: struct.Struct) -> Writer:
    pack = codec.pack

    def write(out: bytearray, value: Any) -> None:
        out += pack(value)

    return write


def take(buf: ReadBuffer, pos: int, length: int) -> tuple[ReadBuffer, int]:
    end = pos + length
    if length < 0 or end > len(buf):
        raise DecodeError(f"truncated: need {length} bytes at {pos}")
    return buf[pos:end], end
