"""Building a v2 record batch one record at a time, as a producer fills it.

Records are encoded as they are appended (Kafka's ``MemoryRecordsBuilder``
does the same), so the cost is spread over ``send()`` calls and a batch is
ready to go the moment it is closed. ``build()`` adds the 61-byte header for a
given producer id / epoch / sequence; the compressed body is kept, so a batch
re-sent after an epoch bump only gets a new header and CRC.

Hot path for our client: ``append_record`` is C (``protocol/_record_encode.c``,
built when a compiler is present); ``append_record_python`` below is the same
encoding, the reference, and a property test checks both write identical bytes.
"""

from __future__ import annotations

import struct

import crc32c

from . import primitives as p
from .compression import Compression, compress
from .records import (BATCH_HEADER, CRC_START, HEADER_SIZE, LOG_OVERHEAD, MAGIC, NO_PRODUCER_EPOCH,
                      NO_PRODUCER_ID, NO_SEQUENCE, TRANSACTIONAL_FLAG)

_TABLE_LIMIT = 1 << 14  # zigzag values below this are one or two bytes


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    p.write_varint(out, value)
    return bytes(out)


_SMALL = [_encode_varint(v) for v in range(_TABLE_LIMIT // 2)]  # 0 .. 8191, the usual lengths and deltas
_NULL = _encode_varint(-1)
_CRC = struct.Struct(">I")


def varint(value: int) -> bytes:
    if 0 <= value < len(_SMALL):
        return _SMALL[value]
    return _encode_varint(value)


def append_record_python(body: bytearray, timestamp_delta: int, offset_delta: int, key, value, headers) -> int:
    """Append one v2 record (length-prefixed) to ``body``; returns the bytes added."""
    parts = [b"\x00", varint(timestamp_delta), varint(offset_delta)]
    if key is None:
        parts.append(_NULL)
    else:
        parts += (varint(len(key)), key)
    if value is None:
        parts.append(_NULL)
    else:
        parts += (varint(len(value)), value)
    if headers:
        parts.append(varint(len(headers)))
        for name, header_value in headers:
            encoded = name.encode("utf-8")
            parts += (varint(len(encoded)), encoded)
            if header_value is None:
                parts.append(_NULL)
            else:
                parts += (varint(len(header_value)), header_value)
    else:
        parts.append(b"\x00")
    record = b"".join(parts)
    before = len(body)
    body += varint(len(record))
    body += record
    return len(body) - before


try:
    from ._record_encode import append_record
    ACCELERATED = True
except ImportError:  # no C compiler at install time: the Python encoding serves
    append_record = append_record_python
    ACCELERATED = False


class BatchBuilder:
    """Appends records to one batch's body; ``build`` frames it."""

    __slots__ = ("compression", "base_timestamp", "max_timestamp", "count", "size", "_body", "_payload")

    def __init__(self, compression: Compression = Compression.NONE):
        self.compression = compression
        self.base_timestamp = -1
        self.max_timestamp = -1
        self.count = 0
        self.size = HEADER_SIZE  # bytes of the batch if it were built now, before compression
        self._body = bytearray()
        self._payload: bytes | None = None

    def append(self, timestamp: int, key: bytes | None, value: bytes | None,
               headers: list[tuple[str, bytes | None]] | None = None) -> int:
        """Encode one record; returns the bytes it added."""
        if self.count == 0:
            self.base_timestamp = timestamp
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        added = append_record(self._body, timestamp - self.base_timestamp, self.count, key, value, headers)
        self.count += 1
        self.size += added
        self._payload = None
        return added

    def build(self, *, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
              base_sequence: int = NO_SEQUENCE, transactional: bool = False) -> bytes:
        if not self.count:
            raise ValueError("a batch holds at least one record")
        if self._payload is None:
            self._payload = compress(self.compression, self._body)
        attributes = int(self.compression) | (TRANSACTIONAL_FLAG if transactional else 0)
        out = bytearray(BATCH_HEADER.pack(
            0, HEADER_SIZE - LOG_OVERHEAD + len(self._payload), -1, MAGIC, 0, attributes, self.count - 1,
            self.base_timestamp, self.max_timestamp, producer_id, producer_epoch, base_sequence, self.count))
        out += self._payload
        _CRC.pack_into(out, 17, crc32c.crc32c(memoryview(out)[CRC_START:]))
        return bytes(out)
