"""The consumer's record walk: a decompressed v2 batch body into plain tuples.

``decode(records, count, base_offset, base_timestamp, log_append_time)`` reads
``count`` records from ``records`` (the batch body after its 61-byte header,
decompressed) and returns one ``(offset, timestamp, key, value, headers)``
tuple a record, ``headers`` a list of ``(name, value)`` with the name decoded
as UTF-8. ``log_append_time`` (the batch's max timestamp on a LogAppendTime
batch, else None) replaces every record's own timestamp, as Kafka's consumer does.
A record whose fields do not fill exactly its declared length, a varint longer
than 10 bytes or a blob running past the end raises ``DecodeError``.

``decode_into(out, record_type, records, count, base_offset, base_timestamp,
log_append_time, position, topic, partition, timestamp_type, leader_epoch)`` is the
same walk appending ``record_type`` objects (fields named as the client's
``ConsumerRecord``) for the records at or after ``position``: the C twin fills the
slots of each instance directly, with no tuple and no ``__init__`` call between.
An offset or timestamp past int64 raises ``DecodeError`` there.

It is the per-record loop of every fetch our consumer makes, so it has a C
implementation (``protocol/_record_decode.c``, built when a compiler is present)
and this pure-Python one, the reference: a property test checks that both agree
on every input, valid or not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from .primitives import DecodeError, ReadBuffer

if TYPE_CHECKING:
    from typing_extensions import Buffer

#: (offset, timestamp, key, value, headers), headers as (name, value) pairs.
DecodedRecord: TypeAlias = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

_MASK64 = (1 << 64) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _varint(buf: ReadBuffer, pos: int, end: int) -> tuple[int, int]:
    """Zigzag varint of at most 10 bytes, read as a 64-bit value (the C walk's arithmetic)."""
    raw = shift = 0
    for _ in range(10):
        if pos >= end:
            raise DecodeError("truncated record")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            raw &= _MASK64
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise DecodeError("varint longer than 10 bytes")


def _blob(buf: ReadBuffer, pos: int, end: int) -> tuple[bytes | None, int]:
    size, pos = _varint(buf, pos, end)
    if size < 0:
        return None, pos
    if size > end - pos:
        raise DecodeError("truncated record")
    return bytes(buf[pos:pos + size]), pos + size


def decode_python(records: Buffer, count: int, base_offset: int, base_timestamp: int,
                  log_append_time: int | None = None) -> list[DecodedRecord]:
    buf = memoryview(records).cast("B") if not isinstance(records, (bytes, bytearray)) else records
    pos, end = 0, len(buf)
    out: list[DecodedRecord] = []
    for _ in range(count):
        length, pos = _varint(buf, pos, end)
        start = pos
        if pos >= end:
            raise DecodeError("truncated record")
        pos += 1  # attributes: unused in v2 records
        timestamp_delta, pos = _varint(buf, pos, end)
        offset_delta, pos = _varint(buf, pos, end)
        key, pos = _blob(buf, pos, end)
        value, pos = _blob(buf, pos, end)
        header_count, pos = _varint(buf, pos, end)
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(max(header_count, 0)):
            raw_name, pos = _blob(buf, pos, end)
            name = (raw_name or b"").decode("utf-8")  # before the value is read, as the C walk does
            header_value, pos = _blob(buf, pos, end)
            headers.append((name, header_value))
        if pos - start != length:
            raise DecodeError("record length does not match its fields")
        timestamp = base_timestamp + timestamp_delta if log_append_time is None else log_append_time
        out.append((base_offset + offset_delta, timestamp, key, value, headers))
    return out


def decode_into_python(out: list[Any], record_type: type, records: Buffer, count: int, base_offset: int,
                       base_timestamp: int, log_append_time: int | None, position: int, topic: str,
                       partition: int, timestamp_type: int, leader_epoch: int) -> None:
    for offset, timestamp, key, value, headers in decode_python(records, count, base_offset, base_timestamp,
                                                                log_append_time):
        if not _INT64_MIN <= offset <= _INT64_MAX or not _INT64_MIN <= timestamp <= _INT64_MAX:
            raise DecodeError("offset or timestamp out of range")
        if offset >= position:
            out.append(record_type(topic=topic, partition=partition, offset=offset, timestamp=timestamp,
                                   timestamp_type=timestamp_type, key=key, value=value, headers=headers,
                                   leader_epoch=leader_epoch))


def _decode_into_c(out: list[Any], record_type: type, records: Buffer, count: int, base_offset: int,
                   base_timestamp: int, log_append_time: int | None, position: int, topic: str, partition: int,
                   timestamp_type: int, leader_epoch: int) -> None:
    c_walk(_record_decode.decode_into, out, record_type, records, count, base_offset, base_timestamp,
           log_append_time, position, topic, partition, timestamp_type, leader_epoch)


def _decode_c(records: Buffer, count: int, base_offset: int, base_timestamp: int,
              log_append_time: int | None = None) -> list[DecodedRecord]:
    decoded: list[DecodedRecord] = c_walk(_record_decode.decode, records, count, base_offset, base_timestamp,
                                          log_append_time)
    return decoded


def c_walk(walk: Callable[..., Any], *args: Any) -> Any:
    """``walk(*args)``, a C walk, with its ValueError as DecodeError (a header name's UnicodeDecodeError
    stays what it is, as in the Python walk)."""
    try:
        return walk(*args)
    except UnicodeDecodeError:
        raise
    except ValueError as exc:
        raise DecodeError(str(exc)) from None


try:
    from . import _record_decode
    decode = _decode_c
    decode_into = _decode_into_c
    ACCELERATED = True
except ImportError:  # no compiler at install time: the reference walk serves
    decode = decode_python
    decode_into = decode_into_python
    ACCELERATED = False
