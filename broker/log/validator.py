"""Record validation on Produce, and the batch a topic stores: Kafka's ``LogValidator``.

``check_batch_header`` checks the header and CRC; ``validate_records`` then
walks the records (decompressing first), as Kafka's
``DefaultRecordBatch`` iterator and ``LogValidator`` do, and answers with
Kafka's codes:

- framing: each record's length varint is filled exactly by its fields, the
  records fill the batch exactly and there are as many as the header counts;
  varints end within 5 bytes (10 for the timestamp delta); header keys are
  not null -> INVALID_RECORD, no error message (Kafka's ``InvalidRecordException``).
  Stricter than Kafka in one place: for a compressed batch kept in its codec
  Kafka reads records with ``readPartiallyFrom``, which does not compare a
  record's length varint with its fields; we check every batch the same way,
  since consumers read with the full check and would stall on such a record;
- offset deltas run 0, 1, 2, ... -> INVALID_RECORD. Deviation: Kafka stores an
  uncompressed batch's deltas as sent and rebuilds a compressed batch whose
  deltas have gaps; we refuse both, since a gap gives records offsets outside
  the batch's range (consumers then skip or repeat records) and no client
  writes one;
- a payload its codec cannot decompress -> UNKNOWN_SERVER_ERROR, Kafka's
  answer (its decompressor's ``KafkaException`` reaches ``ReplicaManager``
  unmapped);
- per record, every record checked and each failure listed in Produce v8+
  ``record_errors`` with Kafka's summary as ``error_message``: a record without
  a key on a compacted topic -> INVALID_RECORD; on a CreateTime topic a
  timestamp outside [now - message.timestamp.before.max.ms,
  now + message.timestamp.after.max.ms] -> INVALID_TIMESTAMP; on a
  LogAppendTime topic a batch whose producer set the LogAppendTime attribute
  -> INVALID_TIMESTAMP.

What is stored (``validate_records`` returns it): the batch as sent when the
topic keeps the producer's codec (``compression.type=producer`` or the same
codec) and its header is right; otherwise a copy with a new header: the
records recompressed with the topic's codec and level, maxTimestamp set to
the append time with the LogAppendTime attribute on a LogAppendTime topic
(baseTimestamp and the records are left alone, as Kafka does), or the records'
true maximum timestamp on a CreateTime topic; CRC recomputed. Producer id,
epoch, sequence, transactional flag and offsets are kept.

The record walk is the hot path: ``protocol.record_scan`` walks the records
once in C (about 1 µs a record in pure Python, which cost 40% of 1 KiB produce
throughput and 73% at 100 bytes; ``python -m bench.validation``), with its
pure-Python reference where no compiler built the extension. Only a failed
batch is walked a second time, here, to name its records.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from weir.protocol import record_scan
from weir.protocol import records as rec
from weir.protocol.compression import Compression, DecompressedTooLarge, compress, decompress
from weir.protocol.errors import Errors, KafkaError

LONG_MAX = 2**63 - 1
CODECS = {"uncompressed": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
          "lz4": Compression.LZ4, "zstd": Compression.ZSTD}
_LEVEL_SETTING = {Compression.GZIP: "compression.gzip.level", Compression.LZ4: "compression.lz4.level",
                  Compression.ZSTD: "compression.zstd.level"}
_GZIP_DEFAULT_LEVEL = -1  # Kafka's "use zlib's default"


class RecordValidationError(KafkaError):
    """Kafka's ``RecordValidationException``: per-record failures, listed in the response."""

    def __init__(self, error: Errors, message: str, record_errors: list[tuple[int, str]]):
        super().__init__(error, message)
        self.record_errors = record_errors


class BatchRefused(KafkaError):
    """A batch refused while walking its records; the response carries no message, as Kafka's."""


class ValidatedBatch(NamedTuple):
    batch: bytes | memoryview  # what to store
    header: rec.BatchHeader
    log_append_time_ms: int  # -1 unless the topic's timestamps are LogAppendTime


# Weir's own bound, with no Kafka setting behind it: Kafka walks a compressed batch as a stream and
# never holds it whole, while Weir decompresses a batch into memory to walk it in C. Without a bound
# a few compressed kilobytes (zstd of zeros) could make the broker hold gigabytes. 128 MiB is 128
# times message.max.bytes' default, past what real data compresses by; the answer is
# MESSAGE_TOO_LARGE, on which the Java producer splits the batch and sends the halves.
MAX_DECOMPRESSED_BATCH_BYTES = 128 * 1024 * 1024
#: Kafka 4.4's max.decompressed.message.bytes default: no bound of Kafka's own. A topic's lower
#: setting is Kafka's, answered as Kafka answers it (INVALID_RECORD); Weir's memory bound above
#: stays in force under a higher one.
MAX_DECOMPRESSED_MESSAGE_BYTES = 2147483639


class TopicPolicy(NamedTuple):
    """The topic settings the validator acts on."""
    compacted: bool
    log_append_time: bool
    before_max_ms: int
    after_max_ms: int
    target: Compression | None  # None: keep the producer's codec
    level: int | None
    max_decompressed_bytes: int = MAX_DECOMPRESSED_MESSAGE_BYTES  # max.decompressed.message.bytes (Kafka 4.4)

    @classmethod
    def of(cls, config: dict) -> TopicPolicy:
        codec_name = config.get("compression.type", "producer")
        target = None if codec_name == "producer" else CODECS[codec_name]
        level_setting = _LEVEL_SETTING.get(target) if target is not None else None
        level = config.get(level_setting) if level_setting else None
        return cls(compacted="compact" in config.get("cleanup.policy", "delete"),
                   log_append_time=config.get("message.timestamp.type", "CreateTime") == "LogAppendTime",
                   before_max_ms=config.get("message.timestamp.before.max.ms", LONG_MAX),
                   after_max_ms=config.get("message.timestamp.after.max.ms", 3600000),
                   target=target, level=level,
                   max_decompressed_bytes=config.get("max.decompressed.message.bytes", MAX_DECOMPRESSED_MESSAGE_BYTES))


def check_batch_header(batch: memoryview, produce_version: int, topic_partition: str,
                       max_message_bytes: int) -> rec.BatchHeader:
    """A produced batch's header and CRC, as Kafka checks them before the records."""
    if len(batch) < rec.HEADER_SIZE:
        raise KafkaError(Errors.CORRUPT_MESSAGE, "record batch shorter than its header")
    header = rec.read_header(batch)
    if header.magic != rec.MAGIC:
        raise KafkaError(Errors.INVALID_RECORD, f"magic {header.magic} is not supported; use v2 batches")
    if header.size != len(batch):
        raise KafkaError(Errors.INVALID_RECORD, "exactly one record batch per partition is allowed")
    codec = header.attributes & rec.COMPRESSION_MASK  # an int: no Enum made per batch
    if codec > Compression.ZSTD:
        raise KafkaError(Errors.UNSUPPORTED_COMPRESSION_TYPE, "unknown compression codec")
    if codec == Compression.ZSTD and produce_version < 7:
        raise KafkaError(Errors.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs Produce v7 or later")
    if header.base_offset != 0:
        raise KafkaError(Errors.INVALID_RECORD, f"The baseOffset of the record batch in the append to "
                         f"{topic_partition} should be 0, but it is {header.base_offset}")
    if header.size > max_message_bytes:
        raise KafkaError(Errors.MESSAGE_TOO_LARGE,
                         f"batch of {header.size} bytes exceeds max.message.bytes")
    if not rec.crc_ok(batch, 0, header):
        raise KafkaError(Errors.CORRUPT_MESSAGE, "record batch CRC mismatch")
    if header.records_count <= 0 or header.records_count != header.last_offset_delta + 1:
        raise KafkaError(Errors.INVALID_RECORD, "record count does not match lastOffsetDelta")
    if header.is_control:
        raise KafkaError(Errors.INVALID_RECORD, "clients may not write control batches")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise KafkaError(Errors.INVALID_RECORD, f"Invalid sequence number {header.base_sequence} in record "
                         f"batch with producerId {header.producer_id}")
    return header


def validate_records(batch: memoryview, header: rec.BatchHeader, now_ms: int, policy: TopicPolicy,
                     topic_partition: str, max_message_bytes: int) -> ValidatedBatch:
    """Walk ``batch``'s records (header and CRC already checked); the batch to store."""
    source = header.attributes & rec.COMPRESSION_MASK  # an int; the Compression enum only when compressed
    data: bytes | memoryview
    if source == Compression.NONE:
        data = batch  # walked in place: indexing a memoryview costs what indexing bytes does, a copy does not
        start = rec.HEADER_SIZE
    else:
        codec = Compression(source)
        topic_bound = policy.max_decompressed_bytes <= MAX_DECOMPRESSED_BATCH_BYTES
        bound = policy.max_decompressed_bytes if topic_bound else MAX_DECOMPRESSED_BATCH_BYTES
        try:
            data = decompress(codec, batch[rec.HEADER_SIZE:], bound)
        except DecompressedTooLarge:
            raise BatchRefused(Errors.INVALID_RECORD if topic_bound else Errors.MESSAGE_TOO_LARGE,
                               f"{codec.name} batch in {topic_partition} decompresses past {bound} bytes") from None
        except Exception as exc:  # each codec library raises its own kinds
            raise BatchRefused(Errors.UNKNOWN_SERVER_ERROR,
                               f"{codec.name} payload does not decompress in {topic_partition}: {exc}") from None
        start = 0
    try:
        scanned = record_scan.scan(data[start:] if start else data, header.records_count)
    except record_scan.RecordScanError as exc:
        raise BatchRefused(Errors.INVALID_RECORD, f"{exc} in topic partition {topic_partition}") from None
    if not scanned.offset_deltas_sequential:
        raise BatchRefused(Errors.INVALID_RECORD, "record offset deltas must run 0, 1, 2, ... in topic partition "
                                                  f"{topic_partition}")
    min_delta, max_delta, null_keys = scanned.min_timestamp_delta, scanned.max_timestamp_delta, scanned.null_keys

    batch_log_append_time = bool(header.attributes & rec.TIMESTAMP_TYPE_FLAG)
    base = header.base_timestamp
    if (null_keys and policy.compacted) or (policy.log_append_time and batch_log_append_time) or (
            not policy.log_append_time and not _within(base, min_delta, max_delta, header, now_ms, policy)):
        _raise_record_errors(data, start, header, now_ms, policy, topic_partition)

    if policy.log_append_time:
        max_timestamp, log_append_time = now_ms, now_ms
        attributes = header.attributes | rec.TIMESTAMP_TYPE_FLAG
    else:
        max_timestamp = header.max_timestamp if batch_log_append_time else max(base + max_delta, -1)
        log_append_time = -1
        attributes = header.attributes & ~rec.TIMESTAMP_TYPE_FLAG
    target = policy.target  # None: the producer's codec stays
    if target is not None and target != source:
        payload = data[start:] if start else data
        stored = rec.rebuild_batch(header, compress(target, payload, policy.level),
                                   attributes=(attributes & ~rec.COMPRESSION_MASK) | int(target),
                                   max_timestamp=max_timestamp)
        if len(stored) > max_message_bytes:
            raise KafkaError(Errors.MESSAGE_TOO_LARGE,
                             f"Message batch size is {len(stored)} bytes in append to partition {topic_partition} "
                             f"which exceeds the maximum configured size of {max_message_bytes}.")
    elif attributes != header.attributes or max_timestamp != header.max_timestamp:
        stored = rec.restamp_batch(batch, attributes=attributes, max_timestamp=max_timestamp)
    else:
        return ValidatedBatch(batch, header, log_append_time)
    return ValidatedBatch(stored, rec.read_header(stored), log_append_time)


def _within(base: int, min_delta: int, max_delta: int, header: rec.BatchHeader, now_ms: int,
            policy: TopicPolicy) -> bool:
    """Whether every CreateTime timestamp is in bounds (records without one are exempt)."""
    if header.attributes & rec.TIMESTAMP_TYPE_FLAG:  # the producer's LogAppendTime: records read maxTimestamp
        low = high = header.max_timestamp
    else:
        low, high = base + min_delta, base + max_delta
    return now_ms - low <= policy.before_max_ms and high - now_ms <= policy.after_max_ms


def _wrap_long(value: int) -> int:
    """Java long arithmetic, for the bounds Kafka prints."""
    return (value + 2**63) % 2**64 - 2**63


def _raise_record_errors(data: bytes | memoryview, start: int, header: rec.BatchHeader, now_ms: int,
                         policy: TopicPolicy, topic_partition: str) -> None:
    """Second, slow walk of a failed batch: one error per failing record, as Kafka lists them."""
    errors: list[tuple[int, str]] = []
    timestamp_error = False
    batch_log_append_time = bool(header.attributes & rec.TIMESTAMP_TYPE_FLAG)
    for index, offset_delta, timestamp_delta, key_null, key_size, value_size in _record_facts(
            data, start, header.records_count):
        timestamp = header.max_timestamp if batch_log_append_time else header.base_timestamp + timestamp_delta
        offset = header.base_offset + offset_delta
        if policy.compacted and key_null:
            errors.append((index, f"Compacted topic cannot accept message without key in topic partition "
                                  f"{topic_partition}"))
        elif not policy.log_append_time and timestamp != -1:
            if now_ms - timestamp > policy.before_max_ms or timestamp - now_ms > policy.after_max_ms:
                timestamp_error = True
                errors.append((index, f"Timestamp {timestamp} of message with offset {offset} is out of range. "
                                      f"The timestamp should be within [{_wrap_long(now_ms - policy.before_max_ms)}, "
                                      f"{_wrap_long(now_ms + policy.after_max_ms)}]"))
        elif batch_log_append_time:
            timestamp_error = True
            record = (f"DefaultRecord(offset={offset}, timestamp={timestamp}, key={key_size} bytes, "
                      f"value={value_size} bytes)")
            errors.append((index, f"Invalid timestamp type in message {record}. Producer should not set "
                                  "timestamp type to LogAppendTime."))
    if not errors:
        return
    if timestamp_error:
        raise RecordValidationError(Errors.INVALID_TIMESTAMP,
                                    "One or more records have been rejected due to invalid timestamp", errors)
    shown = ", ".join(f"RecordError(batchIndex={index}, message='{message}')" for index, message in errors[:3])
    raise RecordValidationError(
        Errors.INVALID_RECORD, f"One or more records have been rejected due to {len(errors)} record errors in "
                               f"total, and only showing the first three errors at most: [{shown}]", errors)


# ------------------------------------------------------------------------------ the walk


def _varint_slow(data: bytes | memoryview, pos: int, max_bytes: int) -> tuple[int, int]:
    """A zigzag varint of up to ``max_bytes`` bytes (5: an int, 10: a long; excess bits dropped as Java's do)."""
    raw = 0
    shift = 0
    for _ in range(max_bytes):
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            raw &= 0xFFFFFFFF if max_bytes == 5 else 0xFFFFFFFFFFFFFFFF
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise ValueError("varint too long")  # unreachable: only walked, valid batches get here


def _record_facts(data: bytes | memoryview, pos: int,
                  count: int) -> Iterator[tuple[int, int, int, bool, int, int]]:
    """(index, offset delta, timestamp delta, key is null, key size, value size) of each
    record of an already walked batch: only the error path uses it."""
    for index in range(count):
        length, pos = _varint_slow(data, pos, 5)
        record_end = pos + length
        timestamp_delta, pos = _varint_slow(data, pos + 1, 10)
        offset_delta, pos = _varint_slow(data, pos, 5)
        key_size, pos = _varint_slow(data, pos, 5)
        pos += max(key_size, 0)
        value_size, _ = _varint_slow(data, pos, 5)
        yield index, offset_delta, timestamp_delta, key_size < 0, max(key_size, 0), max(value_size, 0)
        pos = record_end
