import os

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from protocol import record_builder
from protocol import records as rec
from protocol.compression import Compression
from protocol.record_builder import BatchBuilder


records = st.lists(st.builds(
    rec.Record, value=st.none() | st.binary(max_size=20000), key=st.none() | st.binary(max_size=50),
    headers=st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=8)), max_size=3),
    timestamp=st.integers(0, 2**41)), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(records, st.sampled_from(list(Compression)), st.booleans())
def test_built_batches_equal_the_reference_encoder(batch, compression, transactional):
    builder = BatchBuilder(compression)
    for record in batch:
        builder.append(record.timestamp, record.key, record.value, record.headers)
    built = builder.build(producer_id=7, producer_epoch=2, base_sequence=40, transactional=transactional)
    header, decoded = rec.decode_batch(built)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert header.is_transactional == transactional and header.compression == compression
    assert [(r.key, r.value, r.headers, r.timestamp) for r in decoded] == \
        [(r.key, r.value, r.headers, r.timestamp) for r in batch]
    assert header.max_timestamp == max(r.timestamp for r in batch)


def test_rebuild_with_a_new_epoch_keeps_the_records_and_fixes_the_crc():
    builder = BatchBuilder(Compression.LZ4)
    builder.append(5, b"k", os.urandom(100))
    first = builder.build(producer_id=1, producer_epoch=0, base_sequence=0)
    second = builder.build(producer_id=1, producer_epoch=1, base_sequence=0)
    assert rec.decode_batch(second)[0].producer_epoch == 1
    assert rec.decode_batch(first)[1][0].value == rec.decode_batch(second)[1][0].value


def test_the_c_encoder_is_built():
    # `make test` installs with a compiler present; without it every send() pays the Python encoding.
    assert record_builder.ACCELERATED


blobs = st.none() | st.binary(max_size=300) | st.binary(max_size=3).map(bytearray)


@settings(max_examples=400, deadline=None)
@given(st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1), blobs, blobs,
       st.none() | st.lists(st.tuples(st.text(max_size=6), blobs), max_size=4), st.binary(max_size=10))
def test_the_c_and_python_encoders_write_identical_bytes(timestamp_delta, offset_delta, key, value, headers, prefix):
    written = []
    for append in (record_builder.append_record, record_builder.append_record_python):
        body = bytearray(prefix)
        added = append(body, timestamp_delta, offset_delta, key, value, headers)
        assert added == len(body) - len(prefix)
        written.append(bytes(body))
    assert written[0] == written[1]


def test_the_encoders_refuse_a_header_name_that_is_not_text():
    for append in (record_builder.append_record, record_builder.append_record_python):
        with pytest.raises((TypeError, AttributeError)):
            append(bytearray(), 0, 0, None, b"v", [(b"name", b"x")])
