"""Building a v2 record batch one record at a time, as a producer fills it.

Records are encoded as they are appended (Kafka's ``MemoryRecordsBuilder``
does the same), so the cost is spread over ``send()`` calls and a batch is
ready to go the moment it is closed. ``build()`` adds the 61-byte header for a
given producer id / epoch / sequence; the compressed body is kept, so a batch
re-sent after an epoch bump only gets a new header and CRC.

Hot path for our client: ``BatchBody.try_append`` (an open batch's body and counters,
one record encoded and the batch's size limit checked in one call) and ``append_record``
are C (``protocol/_record_encode.c``, built when a compiler is present);
``BatchBodyPython`` and ``append_record_python`` below are the same, the reference,
and property tests check both write identical bytes.

``append_arrow`` is the exactly-once sink's path: the records of whole Arrow
key/value columns (binary or string, as Spark hands them to a Python writer) in
one C call per batch, read in place from the Arrow buffers (no Python object
per row); ``append_arrow_python`` is its reference, tested the same way.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from . import primitives as p
from .compression import Compression, compress
from .records import (BATCH_HEADER, CRC_START, HEADER_SIZE, LOG_OVERHEAD, MAGIC, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
                      NO_SEQUENCE, TRANSACTIONAL_FLAG, crc32c_of)

if TYPE_CHECKING:
    import pyarrow as pa
    from typing_extensions import Buffer

    #: An Arrow column as ``append_arrow`` reads it (see ``arrow_column``).
    ArrowColumn: TypeAlias = tuple[Buffer | None, Buffer, Buffer | None, int, bool] | None

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


def append_record_python(body: bytearray, timestamp_delta: int, offset_delta: int, key: bytes | None,
                         value: bytes | None, headers: Sequence[tuple[str, bytes | None]] | None) -> int:
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


_OFFSETS = {False: struct.Struct("<i"), True: struct.Struct("<q")}


def arrow_column(array: pa.Array | None) -> ArrowColumn:
    """An Arrow column as ``append_arrow`` reads it: None if every row is null (or ``array`` is None),
    else (validity buffer or None, offsets buffer, data buffer or None, array offset, 64-bit offsets?).
    TypeError for a column that is not binary, string or their large variants."""
    import pyarrow as pa
    if array is None or pa.types.is_null(array.type):
        return None
    if pa.types.is_binary(array.type) or pa.types.is_string(array.type):
        wide = False
    elif pa.types.is_large_binary(array.type) or pa.types.is_large_string(array.type):
        wide = True
    else:
        raise TypeError(f"an Arrow {array.type} column is not bytes")
    validity, offsets, data = array.buffers()
    return (validity if array.null_count else None, offsets, data, array.offset, wide)


def _arrow_value(column: ArrowColumn, row: int) -> bytes | None:
    if column is None:
        return None
    validity, offsets, data, offset, wide = column
    index = offset + row
    if validity is not None and not (memoryview(validity)[index >> 3] >> (index & 7)) & 1:
        return None
    unpack = _OFFSETS[wide].unpack_from
    width = _OFFSETS[wide].size
    start, end = unpack(offsets, index * width)[0], unpack(offsets, (index + 1) * width)[0]
    if not 0 <= start <= end <= (0 if data is None else len(memoryview(data))):
        raise ValueError("Arrow offsets outside the data buffer")
    return b"" if data is None else bytes(memoryview(data)[start:end])


def append_arrow_python(body: bytearray, timestamp_delta: int, offset_delta: int, keys: ArrowColumn,
                        values: ArrowColumn, length: int, rows: Buffer, start: int, size: int,
                        limit: int) -> tuple[int, int]:
    """Append the records of ``rows[start:]`` (int32 row numbers into the ``length``-row columns ``keys``
    and ``values``, from ``arrow_column``), no headers, offset deltas from ``offset_delta``, stopping after
    the record that brings the batch's ``size`` to ``limit``; returns (next position in rows, bytes added)."""
    row_numbers = memoryview(rows).cast("B").cast("i")
    if not 0 <= start <= len(row_numbers):
        raise ValueError("start outside rows")
    position, added = start, 0
    while position < len(row_numbers):
        row = row_numbers[position]
        if not 0 <= row < length:
            raise ValueError("row number outside the columns")
        grew = append_record_python(body, timestamp_delta, offset_delta + position - start,
                                    _arrow_value(keys, row), _arrow_value(values, row), None)
        added += grew
        size += grew
        position += 1
        if size >= limit:
            break
    return position, added


class BatchBodyPython:
    """One open batch's records (the reference of the C ``BatchBody``): the encoded ``body``, the
    first and largest timestamps, the record ``count`` and the batch's ``size`` were it built now
    (``size`` starts at the header's). ``try_append`` is the producer's per-record step. ``capacity``:
    the bytes of records the C type's memory grows to by doubling; here bytearray grows as it does."""

    __slots__ = ("body", "base_timestamp", "max_timestamp", "count", "size")

    def __init__(self, size: int, capacity: int = 0) -> None:
        self.body = bytearray()
        self.base_timestamp = -1
        self.max_timestamp = -1
        self.count = 0
        self.size = size

    def try_append(self, timestamp: int, key: bytes | None, value: bytes | None,
                   headers: Sequence[tuple[str, bytes | None]] | None, limit: int) -> int:
        """Encode one record; the bytes it added, or -1 when the body holds records and the batch would
        pass ``limit`` bytes (``limit`` < 0: none) with this one (then nothing is written)."""
        base = self.base_timestamp if self.count else timestamp
        before = len(self.body)
        added = append_record(self.body, timestamp - base, self.count, key, value, headers)
        if self.count and 0 <= limit < self.size + added:
            del self.body[before:]
            return -1
        self.base_timestamp = base
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        self.count += 1
        self.size += added
        return added


try:
    from ._record_encode import BatchBody, append_arrow, append_record
    ACCELERATED = True
except ImportError:  # no C compiler at install time: the Python encoding serves
    append_record = append_record_python
    append_arrow = append_arrow_python
    BatchBody = BatchBodyPython  # type: ignore[misc,assignment]  # the same interface
    ACCELERATED = False


class BatchBuilder(BatchBody):
    """Appends records to one batch's body (``try_append``, or ``append`` without a limit); ``build``
    frames it."""

    __slots__ = ("compression", "_payload")

    def __init__(self, compression: Compression = Compression.NONE, capacity: int = 0) -> None:
        super().__init__(HEADER_SIZE, capacity)  # size: bytes of the batch if it were built now, uncompressed
        self.compression = compression
        # (the record count it holds, the payload): records appended since make it stale
        self._payload: tuple[int, bytes | bytearray] | None = None

    def append(self, timestamp: int, key: bytes | None, value: bytes | None,
               headers: list[tuple[str, bytes | None]] | None = None) -> int:
        """Encode one record; returns the bytes it added."""
        return self.try_append(timestamp, key, value, headers, -1)

    def append_arrow(self, timestamp: int, keys: ArrowColumn, values: ArrowColumn, length: int, rows: bytes,
                     start: int, limit: int) -> int:
        """Encode the records of ``rows[start:]`` of Arrow columns (see ``append_arrow_python``) until the
        batch reaches ``limit`` bytes; returns the position in ``rows`` to go on from."""
        if start >= len(rows) // 4:
            return start
        if self.count == 0:
            self.base_timestamp = timestamp
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        end, added = append_arrow(self.body, timestamp - self.base_timestamp, self.count, keys, values, length,
                                  rows, start, self.size, limit)
        self.count += end - start
        self.size += added
        return end

    def build(self, *, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
              base_sequence: int = NO_SEQUENCE, transactional: bool = False) -> bytearray:
        if not self.count:
            raise ValueError("a batch holds at least one record")
        if self._payload is None or self._payload[0] != self.count:
            # uncompressed, the body is the payload as it is (no copy of it)
            self._payload = (self.count, self.body if self.compression == Compression.NONE
                             else compress(self.compression, self.body))
        payload = self._payload[1]
        attributes = int(self.compression) | (TRANSACTIONAL_FLAG if transactional else 0)
        out = bytearray(HEADER_SIZE)
        out += payload  # the one copy: the header and the payload made one buffer
        BATCH_HEADER.pack_into(
            out, 0, 0, HEADER_SIZE - LOG_OVERHEAD + len(payload), -1, MAGIC, 0, attributes, self.count - 1,
            self.base_timestamp, self.max_timestamp, producer_id, producer_epoch, base_sequence, self.count)
        _CRC.pack_into(out, 17, crc32c_of(memoryview(out)[CRC_START:]))
        return out  # a bytearray: bytes() would copy the batch once more
