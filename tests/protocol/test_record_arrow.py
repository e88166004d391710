"""The C Arrow walk (protocol/_record_arrow.c) and its pure-Python twin build the same record batches."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.protocol import record_arrow
from weir.protocol import records as rec
from weir.protocol.primitives import DecodeError
from tests.protocol.test_record_decode import record_strategy

WALKS = [record_arrow.RecordColumnsPython, record_arrow.RecordColumns]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(record_strategy, min_size=1, max_size=6), min_size=1, max_size=3),
       st.none() | st.integers(0, 2**41), st.integers(0, 12), st.integers(0, 20))
def test_both_walks_build_the_same_batch(batches, log_append_time, position, limit):
    built = []
    for walk in WALKS:
        columns, base, afters = walk(), 0, []
        for records in batches:
            body = rec.encode_batch(records)[rec.HEADER_SIZE:]
            afters.append(columns.add(body, len(records), base, records[0].timestamp, log_append_time,
                                      1 if log_append_time is not None else 0, position, limit))
            base += len(records)
        batch = columns.record_batch()
        batch.validate(full=True)
        built.append((batch, afters))
    (expected, expected_afters), (got, got_afters) = built
    assert got.equals(expected) and got.schema == expected.schema == record_arrow.schema()
    assert got_afters == expected_afters
    everything = [r for records in batches for r in records]
    shown = [(offset, r.value) for offset, r in enumerate(everything) if offset >= position][:limit]
    assert list(zip(got.column("offset").to_pylist(), got.column("value").to_pylist(), strict=True)) == shown


@pytest.mark.parametrize("walk", WALKS)
def test_faults(walk):
    with pytest.raises(DecodeError, match="truncated"):
        walk().add(b"\x0a\x00", 1, 0, 0, None, 0, 0, 10)
    with pytest.raises(DecodeError, match="longer than 10 bytes"):
        walk().add(b"\xff" * 11, 1, 0, 0, None, 0, 0, 10)
    body = rec.encode_batch([rec.Record(b"v", headers=[("h", b"x")], timestamp=1)])[rec.HEADER_SIZE:]
    bad_name = bytes(body).replace(b"\x02h", b"\x02\xff")  # the header name's one byte: not UTF-8
    with pytest.raises(UnicodeDecodeError):
        walk().add(bad_name, 1, 0, 1, None, 0, 0, 10)


def test_rows_decoded_before_come_first():
    columns = record_arrow.RecordColumns()
    body = rec.encode_batch([rec.Record(b"c", timestamp=5)])[rec.HEADER_SIZE:]
    columns.add_rows([(b"k", b"a", 3, 4, 0, [("h", None)])])
    assert columns.add(body, 1, 4, 5, None, 0, 0, 2) == 5
    assert columns.rows == 2
    batch = columns.record_batch()
    assert batch.column("offset").to_pylist() == [3, 4]
    assert batch.column("headers").to_pylist() == [[{"key": "h", "value": None}], []]
