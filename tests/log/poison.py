"""Hand-framed record batches with a correct CRC: the poison kinds Produce must refuse.

Each builder returns the bytes of one batch whose header and CRC are right,
so only the record walk can tell it is bad.
"""

from __future__ import annotations

from weir.protocol import primitives as p
from weir.protocol import records as rec
from weir.protocol.compression import Compression, compress

NOW = 1_700_000_000_000


def varint(value: int) -> bytes:
    out = bytearray()
    p.write_varint(out, value)
    return bytes(out)


def record(offset_delta: int, value: bytes | None = b"value", key: bytes | None = b"key", timestamp_delta: int = 0,
           headers: list[tuple[bytes | None, bytes | None]] = ()) -> bytes:
    """One record, framed as DefaultRecord writes it."""
    body = bytearray(b"\x00") + varint(timestamp_delta) + varint(offset_delta)
    for blob in (key, value):
        body += varint(-1) if blob is None else varint(len(blob)) + blob
    body += varint(len(headers))
    for name, header_value in headers:
        body += varint(-1) if name is None else varint(len(name)) + name
        body += varint(-1) if header_value is None else varint(len(header_value)) + header_value
    return varint(len(body)) + bytes(body)


def batch(payload: bytes, count: int, *, codec: Compression = Compression.NONE, compress_payload: bool = True,
          base_timestamp: int = NOW, max_timestamp: int | None = None, attributes: int = 0,
          producer_id: int = -1, base_sequence: int = -1) -> bytes:
    """A batch around ``payload`` (records) with a correct CRC and the header counting ``count``."""
    if compress_payload:
        payload = compress(codec, payload)
    header = rec.BatchHeader(0, 0, -1, rec.MAGIC, 0, 0, count - 1, base_timestamp,
                             base_timestamp if max_timestamp is None else max_timestamp,
                             producer_id, 0 if producer_id >= 0 else -1, base_sequence, count)
    return rec.rebuild_batch(header, payload, attributes=attributes | int(codec),
                             max_timestamp=header.max_timestamp)


def good(*values: bytes, timestamp_delta: int = 0) -> bytes:
    return batch(b"".join(record(i, v, timestamp_delta=timestamp_delta) for i, v in enumerate(values)),
                 len(values))


def _framed(body: bytes) -> bytes:
    return varint(len(body)) + body


def poison_batches() -> dict[str, bytes]:
    """Every poison kind with a correct CRC, refused on any topic (see ``POISON_CODES``)."""
    two = record(0) + record(1)
    return {
        "garbage records": batch(b"garbage!" * 8, 1),
        "compression flag over an uncompressed payload": batch(two, 2, codec=Compression.GZIP,
                                                               compress_payload=False),
        "zstd flag over an uncompressed payload": batch(two, 2, codec=Compression.ZSTD, compress_payload=False),
        "count larger than the records": batch(two, 3),
        "count smaller than the records": batch(two + record(2), 2),
        "compressed count mismatch": batch(two, 3, codec=Compression.LZ4),
        "offset delta gap": batch(record(0) + record(2), 2),
        "offset deltas not from zero": batch(record(1) + record(2), 2),
        "bad varint": batch(b"\x0c\x00\x00" + b"\xff" * 6 + b"\x01\x00\x00\x00", 1),
        "trailing bytes": batch(two + b"\x00\x00", 2),
        "record overrunning the batch": batch(varint(200) + record(0)[1:], 1),
        "record length longer than its fields": batch(varint(len(record(0))) + record(0)[1:] + b"\x00", 1),
        "record length shorter than its fields": batch(varint(len(record(0)) - 3) + record(0)[1:], 1),
        "key overrunning its record": batch(_framed(b"\x00\x00\x00" + varint(20) + b"k" + varint(1) + b"v\x00")
                                            + record(1), 2),
        "null header key": batch(record(0, headers=[(None, b"v")]), 1),
        "negative header count": batch(record(0)[:-1] + varint(-2), 1),
        "control batch": rec.encode_control_batch(commit=True, producer_id=5, producer_epoch=0,
                                                  coordinator_epoch=0, timestamp=NOW),
    }


POISON_CODES = {name: "INVALID_RECORD" for name in poison_batches()}
# Kafka's answer: its decompressor's exception reaches ReplicaManager unmapped.
POISON_CODES["compression flag over an uncompressed payload"] = "UNKNOWN_SERVER_ERROR"
POISON_CODES["zstd flag over an uncompressed payload"] = "UNKNOWN_SERVER_ERROR"
