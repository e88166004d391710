"""The C record walk and its pure-Python reference agree on every input, valid or not."""

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.protocol import primitives as p
from weir.protocol import record_scan
from weir.protocol import records as rec


def test_the_c_walk_is_built():
    # `make test` installs with a compiler present; a missing build would silently cost ~100x on produce.
    assert record_scan.ACCELERATED


def _body(records):
    return rec.encode_batch(records)[rec.HEADER_SIZE:]


record_strategy = st.builds(
    rec.Record,
    value=st.none() | st.binary(max_size=300),
    key=st.none() | st.binary(max_size=20),
    headers=st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=3),
    timestamp=st.integers(0, 2**41))


def _outcome(scan, data, count):
    try:
        return scan(data, count)
    except record_scan.RecordScanError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None)
@given(st.lists(record_strategy, min_size=1, max_size=8))
def test_valid_records_scan_alike(records):
    body = _body(records)
    result = record_scan.scan(body, len(records))
    assert result == record_scan.scan_python(body, len(records))
    assert result.null_keys == sum(r.key is None for r in records)
    assert result.offset_deltas_sequential
    first = records[0].timestamp
    deltas = [r.timestamp - first for r in records]
    assert (result.min_timestamp_delta, result.max_timestamp_delta) == (min(deltas), max(deltas))


@settings(max_examples=1500, deadline=None)
@given(st.lists(record_strategy, min_size=1, max_size=4), st.data())
def test_mutated_records_scan_alike(records, data):
    body = bytearray(_body(records))
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "extend", "byte"]))
        if kind == "cut" and body:
            del body[data.draw(st.integers(0, len(body) - 1)):]
        elif kind == "extend":
            body += data.draw(st.binary(min_size=1, max_size=6))
        elif body:
            at = data.draw(st.integers(0, len(body) - 1))
            flipped = body[at] ^ (1 << data.draw(st.integers(0, 7)))
            body[at] = data.draw(st.integers(0, 255)) if kind == "byte" else flipped
    count = data.draw(st.integers(0, len(records) + 1))
    assert _outcome(record_scan.scan, bytes(body), count) == _outcome(record_scan.scan_python, bytes(body), count)


def _record(fields: bytes) -> bytes:
    out = bytearray()
    p.write_varint(out, len(fields))
    return bytes(out) + fields


def _fields(*, offset_delta=0, key=b"k", value=b"v", headers=0, timestamp_delta=0):
    out = bytearray(b"\x00")
    p.write_varint(out, timestamp_delta)
    p.write_varint(out, offset_delta)
    for blob in (key, value):
        if blob is None:
            p.write_varint(out, -1)
        else:
            p.write_varint(out, len(blob))
            out += blob
    p.write_varint(out, headers)
    return bytes(out)


@pytest.mark.parametrize("scan", [record_scan.scan, record_scan.scan_python], ids=["c", "python"])
@pytest.mark.parametrize("body,count,message", [
    (_record(_fields()) + b"\x00", 1, "Incorrect declared batch size, records still remaining in file"),
    (_record(_fields())[:-1], 1, "Invalid record size: expected 8 bytes in record payload, but instead the "
                                 "buffer has only 7 remaining bytes."),
    (_record(_fields()), 2, "Found invalid record structure"),
    (_record(_fields(headers=-1)), 1, "Found invalid number of record headers -1"),
    (_record(_fields(headers=1) + b"\x01\x00"), 1, "Invalid negative header key size -1"),
    (_record(_fields() + b"\x00"), 1,
     "Invalid record size: expected to read 9 bytes in record payload, but instead read 8"),
    (b"\xff\xff\xff\xff\xff\x01", 1, "Found invalid record structure"),  # a varint of six bytes
])
def test_faults_carry_kafkas_messages(scan, body, count, message):
    with pytest.raises(record_scan.RecordScanError, match=f"^{message.replace('(', '.').replace(')', '.')}$"):
        scan(body, count)


@pytest.mark.parametrize("scan", [record_scan.scan, record_scan.scan_python], ids=["c", "python"])
def test_offset_deltas_and_null_keys_are_reported(scan):
    body = _record(_fields(offset_delta=0, key=None)) + _record(_fields(offset_delta=5, timestamp_delta=-3))
    assert scan(body, 2) == record_scan.ScanResult(-3, 0, 1, False)


def test_a_megabyte_of_kibibyte_records_scans_fast():
    """The point of the C walk: far below the ~1 ms/MB the produce path can afford."""
    import time
    records = [rec.Record(value=os.urandom(1024), key=b"k%d" % i, timestamp=i) for i in range(1000)]
    body = _body(records)
    started = time.perf_counter()
    for _ in range(20):
        record_scan.scan(body, len(records))
    per_mb = (time.perf_counter() - started) / 20 / (len(body) / 1e6)
    assert per_mb < 2e-3, f"{per_mb * 1e3:.2f} ms per MB"
