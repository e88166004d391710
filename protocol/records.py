"""RecordBatch v2 (magic 2): the 61-byte header, records, control records.

The broker reads the header (``BATCH_HEADER``, one precompiled
``struct.Struct``), checks the CRC and walks the records without decoding them
(``broker/log/validator.py``); it rewrites a header only to restamp or
recompress a batch (``restamp_batch``, ``rebuild_batch``). Records are built
and decoded by clients. ``BatchHeaderFormat`` declares the same header with
construct; tests check the two agree.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import cache
from typing import Any, NamedTuple
from collections.abc import Iterator

from . import primitives as p
from .compression import Compression, compress, decompress

def crc32c_of(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C of ``data``. The ``crc32c`` package is imported on first use, not with this module: its
    ``__init__`` loads importlib.metadata and argparse (~15 ms of ``import weir.client``)."""
    from crc32c import crc32c
    return crc32c(data)


MAGIC = 2
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = BATCH_HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength precede what batchLength counts
CRC_START = 21  # the CRC covers attributes (offset 21) to the end of the batch
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
_CRC = struct.Struct(">I")  # at 17
_ATTRIBUTES = struct.Struct(">h")  # at 21
_MAX_TIMESTAMP = struct.Struct(">q")  # at 35

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40  # KIP-534: base timestamp holds the log cleaner's delete horizon

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1


def __getattr__(name: str) -> Any:
    # Built on first use (tests compare it with BATCH_HEADER): construct takes ~15 ms to import,
    # and a client that never asks for the declaration should not pay for it.
    if name == "BatchHeaderFormat":
        return _batch_header_format()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _batch_header_format() -> Any:
    import construct as c

    return c.Struct(
        "base_offset" / c.Int64sb,
        "batch_length" / c.Int32sb,
        "partition_leader_epoch" / c.Int32sb,
        "magic" / c.Int8sb,
        "crc" / c.Int32ub,
        "attributes" / c.Int16sb,
        "last_offset_delta" / c.Int32sb,
        "base_timestamp" / c.Int64sb,
        "max_timestamp" / c.Int64sb,
        "producer_id" / c.Int64sb,
        "producer_epoch" / c.Int16sb,
        "base_sequence" / c.Int32sb,
        "records_count" / c.Int32sb,
    )


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & COMPRESSION_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def last_sequence(self) -> int:
        return increment_sequence(self.base_sequence, self.last_offset_delta)


def increment_sequence(sequence: int, delta: int) -> int:
    """Sequences wrap from INT32_MAX back to 0 (Kafka's ``incrementSequence``)."""
    if sequence > 0x7FFFFFFF - delta:
        return delta - (0x7FFFFFFF - sequence) - 1
    return sequence + delta


def read_header(buf: p.ReadBuffer, pos: int = 0) -> BatchHeader:
    return BatchHeader._make(BATCH_HEADER.unpack_from(buf, pos))


def crc_of(buf: p.ReadBuffer, start: int, end: int) -> int:
    return crc32c_of(memoryview(buf)[start + CRC_START:end])


def crc_ok(buf: p.ReadBuffer, start: int, header: BatchHeader) -> bool:
    return crc_of(buf, start, start + header.size) == header.crc


def iter_headers(buf: p.ReadBuffer, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each complete batch in ``buf``; stops at a partial one."""
    end = len(buf)
    while pos + HEADER_SIZE <= end:
        header = read_header(buf, pos)
        if header.batch_length < MIN_BATCH_LENGTH or pos + header.size > end:
            return
        yield pos, header
        pos += header.size


# ----------------------------------------------------------------------------- records


@dataclass(slots=True)
class Record:
    value: bytes | None
    key: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    timestamp: int = -1
    offset: int = -1


def _encode_record(out: bytearray, record: Record, offset_delta: int, timestamp_delta: int) -> None:
    body = bytearray(b"\x00")  # record attributes, unused
    p.write_varint(body, timestamp_delta)
    p.write_varint(body, offset_delta)
    for blob in (record.key, record.value):
        if blob is None:
            p.write_varint(body, -1)
        else:
            p.write_varint(body, len(blob))
            body += blob
    p.write_varint(body, len(record.headers))
    for name, value in record.headers:
        encoded = name.encode("utf-8")
        p.write_varint(body, len(encoded))
        body += encoded
        if value is None:
            p.write_varint(body, -1)
        else:
            p.write_varint(body, len(value))
            body += value
    p.write_varint(out, len(body))
    out += body


def _read_blob(buf: p.ReadBuffer, pos: int) -> tuple[bytes | None, int]:
    length, pos = p.read_varint(buf, pos)
    if length < 0:
        return None, pos
    raw, pos = p.take(buf, pos, length)
    return bytes(raw), pos


def _decode_records(buf: p.ReadBuffer, count: int, base_offset: int, base_timestamp: int,
                    log_append_time: int | None = None) -> list[Record]:
    # Every consumer's fetch goes through here. Most varints of a record (its length under 64 bytes
    # aside: attributes, deltas, key length, header count) are one byte, so that case is decoded
    # inline and only longer ones call read_varint: about twice as fast on small records.
    read_varint = p.read_varint
    size = len(buf)
    records: list[Record] = []
    append = records.append
    pos = 0
    for _ in range(count):
        byte = buf[pos] if pos < size else 0x80  # 0x80: truncated, let read_varint raise
        if byte < 0x80:
            length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
        else:
            length, pos = read_varint(buf, pos)
        end = pos + length
        pos += 1  # attributes
        byte = buf[pos] if pos < size else 0x80
        if byte < 0x80:
            timestamp_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 1
        else:
            timestamp_delta, pos = read_varint(buf, pos)
        byte = buf[pos] if pos < size else 0x80
        if byte < 0x80:
            offset_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 1
        else:
            offset_delta, pos = read_varint(buf, pos)
        byte = buf[pos] if pos < size else 0x80
        if byte < 0x80:
            key_length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
        else:
            key_length, pos = read_varint(buf, pos)
        if key_length < 0:
            key = None
        else:
            if pos + key_length > size:
                raise p.DecodeError(f"truncated: need {key_length} bytes at {pos}")
            key = bytes(buf[pos:pos + key_length])
            pos += key_length
        value, pos = _read_blob(buf, pos)
        byte = buf[pos] if pos < size else 0x80
        if byte < 0x80:
            header_count, pos = (byte >> 1) ^ -(byte & 1), pos + 1
        else:
            header_count, pos = read_varint(buf, pos)
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(header_count):
            name, pos = _read_blob(buf, pos)
            header_value, pos = _read_blob(buf, pos)
            headers.append(((name or b"").decode("utf-8"), header_value))
        if pos != end:
            raise p.DecodeError("record length does not match its fields")
        timestamp = base_timestamp + timestamp_delta if log_append_time is None else log_append_time
        append(Record(value, key, headers, timestamp, base_offset + offset_delta))
    return records


def encode_batch(records: list[Record], *, base_offset: int = 0,
                 compression: Compression = Compression.NONE,
                 producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                 base_sequence: int = NO_SEQUENCE, transactional: bool = False,
                 control: bool = False, partition_leader_epoch: int = -1) -> bytes:
    """Build one v2 batch; records with timestamp -1 are stamped with the first one's."""
    if not records:
        raise ValueError("a batch holds at least one record")
    base_timestamp = records[0].timestamp
    body = bytearray()
    max_timestamp = base_timestamp
    for delta, record in enumerate(records):
        timestamp = record.timestamp if record.timestamp >= 0 else base_timestamp
        max_timestamp = max(max_timestamp, timestamp)
        _encode_record(body, record, delta, timestamp - base_timestamp)
    payload = compress(compression, bytes(body))
    attributes = int(compression)
    if transactional:
        attributes |= TRANSACTIONAL_FLAG
    if control:
        attributes |= CONTROL_FLAG
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    out = bytearray(BATCH_HEADER.pack(
        base_offset, batch_length, partition_leader_epoch, MAGIC, 0, attributes, len(records) - 1,
        base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, len(records)))
    out += payload
    return _with_crc(out)


def _with_crc(out: bytearray) -> bytes:
    _CRC.pack_into(out, 17, crc32c_of(memoryview(out)[CRC_START:]))
    return bytes(out)


def rebuild_batch(header: BatchHeader, payload: bytes, *, attributes: int, max_timestamp: int) -> bytes:
    """``header``'s batch around a new (recompressed) records payload: every field kept
    but the attributes, maxTimestamp, length and CRC."""
    out = bytearray(BATCH_HEADER.pack(
        header.base_offset, HEADER_SIZE - LOG_OVERHEAD + len(payload), header.partition_leader_epoch, MAGIC, 0,
        attributes, header.last_offset_delta, header.base_timestamp, max_timestamp, header.producer_id,
        header.producer_epoch, header.base_sequence, header.records_count))
    out += payload
    return _with_crc(out)


def restamp_batch(batch: p.ReadBuffer, *, attributes: int, max_timestamp: int) -> bytes:
    """A copy of ``batch`` with new attributes and maxTimestamp, and its CRC recomputed."""
    out = bytearray(batch)
    _ATTRIBUTES.pack_into(out, 21, attributes)
    _MAX_TIMESTAMP.pack_into(out, 35, max_timestamp)
    return _with_crc(out)


def rebuild_compacted_batch(original: BatchHeader, records: list[Record],
                            delete_horizon_ms: int | None = None) -> bytes:
    """``original`` holding only ``records`` (the log cleaner's output): the same base and
    last offset, producer fields and compression; records keep their offsets and
    timestamps. With ``delete_horizon_ms`` the base timestamp is that horizon and the
    attributes say so (KIP-534); with no records it is Kafka's empty batch, a header only.
    """
    if records:
        base_timestamp = records[0].timestamp if delete_horizon_ms is None else delete_horizon_ms
        body = bytearray()
        for record in records:
            _encode_record(body, record, record.offset - original.base_offset, record.timestamp - base_timestamp)
        max_timestamp = max(record.timestamp for record in records)
        payload = compress(original.compression, bytes(body))
    else:
        base_timestamp = original.max_timestamp if delete_horizon_ms is None else delete_horizon_ms
        max_timestamp, payload = original.max_timestamp, b""
    attributes = original.attributes & ~DELETE_HORIZON_FLAG
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG
    out = bytearray(BATCH_HEADER.pack(
        original.base_offset, HEADER_SIZE - LOG_OVERHEAD + len(payload), original.partition_leader_epoch, MAGIC, 0,
        attributes, original.last_offset_delta, base_timestamp, max_timestamp, original.producer_id,
        original.producer_epoch, original.base_sequence, len(records)))
    out += payload
    struct.pack_into(">I", out, 17, crc32c_of(memoryview(out)[CRC_START:]))
    return bytes(out)


def delete_horizon_ms(header: BatchHeader) -> int | None:
    return header.base_timestamp if header.attributes & DELETE_HORIZON_FLAG else None


def decode_batch(buf: p.ReadBuffer, pos: int = 0, *, verify_crc: bool = True) -> tuple[BatchHeader, list[Record]]:
    """``verify_crc=False``: for bytes already verified (a broker replaying its own log)."""
    header = read_header(buf, pos)
    if header.magic != MAGIC:
        raise p.DecodeError(f"unsupported magic {header.magic}")
    end = pos + header.size
    if end > len(buf):
        raise p.DecodeError("truncated batch")
    if verify_crc and not crc_ok(buf, pos, header):
        raise p.DecodeError("batch CRC mismatch")
    payload = decompress(header.compression, memoryview(buf)[pos + HEADER_SIZE:end])
    # In a LogAppendTime batch every record's timestamp is the batch's maxTimestamp.
    log_append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_FLAG else None
    return header, _decode_records(payload, header.records_count, header.base_offset,
                                   header.base_timestamp, log_append_time)


def decode_batches(buf: p.ReadBuffer) -> Iterator[tuple[BatchHeader, list[Record]]]:
    for pos, _header in iter_headers(buf):
        yield decode_batch(buf, pos)


# ---------------------------------------------------------------------- control records

CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")
_ATTRIBUTES = struct.Struct(">h")
_MARKER = struct.Struct(">hhxhi")  # key (version, type), the value's length byte, value (version, epoch)
_LENGTH_AT = HEADER_SIZE
ATTRIBUTES_AT = 21  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc


def encode_control_batch(*, commit: bool, producer_id: int, producer_epoch: int,
                         coordinator_epoch: int, timestamp: int, base_offset: int = 0) -> bytes:
    """A transaction marker: one control record keyed by (version 0, ABORT|COMMIT)."""
    record = Record(key=_CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT),
                    value=_CONTROL_VALUE.pack(0, coordinator_epoch), timestamp=timestamp)
    return encode_batch([record], base_offset=base_offset, producer_id=producer_id,
                        producer_epoch=producer_epoch, transactional=True, control=True)


def read_control_batch(batch: p.ReadBuffer) -> tuple[int, int]:
    """(control type, coordinator epoch) of an uncompressed control batch's first record, read in
    place: what replaying a log needs of each marker, without decoding the batch."""
    if _ATTRIBUTES.unpack_from(batch, ATTRIBUTES_AT)[0] & COMPRESSION_MASK:  # never so in Kafka; still read right
        _header, records = decode_batch(batch, verify_crc=False)
        return decode_control_record(records[0])
    if (batch[_LENGTH_AT] < 0x80 and batch[_LENGTH_AT + 2] == 0 and batch[_LENGTH_AT + 3] == 0
            and batch[_LENGTH_AT + 4] == 8 and batch[_LENGTH_AT + 9] == 12):
        # The usual marker: one-byte varints, timestamp and offset deltas 0, a 4-byte key, a 6-byte value.
        _version, kind, _value_version, coordinator_epoch = _MARKER.unpack_from(batch, _LENGTH_AT + 5)
        return kind, coordinator_epoch
    pos = HEADER_SIZE
    _length, pos = p.read_varint(batch, pos)
    pos += 1  # attributes
    _timestamp_delta, pos = p.read_varint(batch, pos)
    _offset_delta, pos = p.read_varint(batch, pos)
    key_length, pos = p.read_varint(batch, pos)
    _version, kind = _CONTROL_KEY.unpack_from(batch, pos)
    value_length, pos = p.read_varint(batch, pos + key_length)
    _version, coordinator_epoch = _CONTROL_VALUE.unpack_from(batch, pos) if value_length >= 6 else (0, 0)
    return kind, coordinator_epoch


def decode_control_record(record: Record) -> tuple[int, int]:
    """(control type, coordinator epoch); larger versions are read by their known prefix."""
    _version, kind = _CONTROL_KEY.unpack_from(record.key or b"", 0)
    _version, coordinator_epoch = _CONTROL_VALUE.unpack_from(record.value or b"", 0)
    return kind, coordinator_epoch
