"""The record walk of Kafka's log validator: one pass over a batch's v2 records.

``scan(records, count)`` walks ``count`` records that must exactly fill
``records`` (a batch body after its 61-byte header, decompressed) and returns
a ``ScanResult``, or raises ``RecordScanError`` with the message Kafka's
``InvalidRecordException`` carries for the same fault (``DefaultRecord.readFrom``
and the batch iterator's "records still remaining" check).

It is the only per-record loop on the broker's produce path, so it has a C
implementation (``protocol/_record_scan.c``, built when a compiler is present)
and this pure-Python one, which is the reference: tests check that both agree
on every input. Measured on this machine with 1 KiB records: ~1 µs a record
here, ~0.01 µs in C.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .primitives import ReadBuffer

if TYPE_CHECKING:
    from typing_extensions import Buffer


class RecordScanError(ValueError):
    """The records are malformed; Kafka answers INVALID_RECORD with this message."""


class ScanResult(NamedTuple):
    min_timestamp_delta: int
    max_timestamp_delta: int
    null_keys: int  # records without a key (refused on compacted topics)
    offset_deltas_sequential: bool  # the i-th record's offset delta is i


_STRUCTURE = "Found invalid record structure"


def _zigzag(buf: ReadBuffer, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    raw = shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            raise RecordScanError(_STRUCTURE)
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if max_bytes == 5:
                raw &= 0xFFFFFFFF
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise RecordScanError(_STRUCTURE)  # Kafka: "Varint is too long"


def _skip_blob(buf: ReadBuffer, pos: int, end: int) -> tuple[int, int]:
    size, pos = _zigzag(buf, pos, end, 5)
    if size > 0:
        if size > end - pos:
            raise RecordScanError(_STRUCTURE)
        pos += size
    return size, pos


def scan_python(records: Buffer, count: int) -> ScanResult:
    buf = memoryview(records).cast("B") if not isinstance(records, (bytes, bytearray)) else records
    pos, end = 0, len(buf)
    min_delta: int | None = None
    max_delta: int | None = None
    null_keys = 0
    sequential = True
    for index in range(count):
        length, pos = _zigzag(buf, pos, end, 5)
        if length < 0 or length > end - pos:
            raise RecordScanError(f"Invalid record size: expected {length} bytes in record payload, but instead "
                                  f"the buffer has only {end - pos} remaining bytes.")
        start = pos
        if pos >= end:
            raise RecordScanError(_STRUCTURE)
        pos += 1  # attributes: unused in v2 records
        timestamp_delta, pos = _zigzag(buf, pos, end, 10)
        offset_delta, pos = _zigzag(buf, pos, end, 5)
        key_size, pos = _skip_blob(buf, pos, end)
        _value_size, pos = _skip_blob(buf, pos, end)
        headers, pos = _zigzag(buf, pos, end, 5)
        if headers < 0:
            raise RecordScanError(f"Found invalid number of record headers {headers}")
        if headers > end - pos:
            raise RecordScanError("Found invalid number of record headers. The number of record headers "
                                  f"exceeds the remaining bytes {end - pos}")
        for _ in range(headers):
            header_key_size, pos = _zigzag(buf, pos, end, 5)
            if header_key_size < 0:
                raise RecordScanError(f"Invalid negative header key size {header_key_size}")
            if header_key_size > end - pos:
                raise RecordScanError(_STRUCTURE)
            pos += header_key_size
            _header_value_size, pos = _skip_blob(buf, pos, end)
        if pos - start != length:
            raise RecordScanError(f"Invalid record size: expected to read {length} bytes in record payload, "
                                  f"but instead read {pos - start}")
        sequential = sequential and offset_delta == index
        null_keys += key_size < 0
        min_delta = timestamp_delta if min_delta is None else min(min_delta, timestamp_delta)
        max_delta = timestamp_delta if max_delta is None else max(max_delta, timestamp_delta)
    if pos != end:
        raise RecordScanError("Incorrect declared batch size, records still remaining in file")
    return ScanResult(min_delta or 0, max_delta or 0, null_keys, sequential)


def _scan_c(records: Buffer, count: int) -> ScanResult:
    try:
        return ScanResult._make(_record_scan.scan(records, count))
    except ValueError as exc:
        raise RecordScanError(str(exc)) from None


try:
    from . import _record_scan
    scan = _scan_c
    ACCELERATED = True
except ImportError:  # no compiler at install time: the reference walk serves
    scan = scan_python
    ACCELERATED = False
