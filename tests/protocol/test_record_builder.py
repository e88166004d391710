import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from weir.protocol import record_builder
from weir.protocol import records as rec
from weir.protocol.compression import Compression
from weir.protocol.record_builder import BatchBuilder


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


arrow_types = st.sampled_from(["binary", "string", "large_binary", "large_string"])
arrow_blobs = st.none() | st.binary(max_size=300)


def arrow_array(blobs, type_name, drop):
    import pyarrow as pa
    if "string" in type_name:
        blobs = [None if b is None else b.hex() for b in blobs]
    return pa.array([None] * drop + blobs, type=getattr(pa, type_name)())[drop:]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(arrow_blobs, arrow_blobs), max_size=40), arrow_types, arrow_types, st.booleans(),
       st.integers(0, 5), st.data())
def test_the_c_and_python_arrow_encoders_write_identical_bytes_and_equal_appending_row_by_row(
        pairs, key_type, value_type, null_keys, drop, data):
    import array

    keys = None if null_keys else arrow_array([k for k, _ in pairs], key_type, drop)
    values = arrow_array([v for _, v in pairs], value_type, drop)
    rows = array.array("i", data.draw(st.permutations(range(len(pairs))))).tobytes()
    start = data.draw(st.integers(0, len(pairs)))
    limit = data.draw(st.integers(0, 3000))
    timestamp_delta, offset_delta, size = data.draw(st.integers(0, 2**40)), data.draw(st.integers(0, 10**6)), 61
    written = []
    for append in (record_builder.append_arrow, record_builder.append_arrow_python):
        body = bytearray(b"prefix")
        answer = append(body, timestamp_delta, offset_delta, record_builder.arrow_column(keys),
                        record_builder.arrow_column(values), len(pairs), rows, start, size, limit)
        written.append((answer, bytes(body)))
    assert written[0] == written[1]
    (end, added), body = written[0]
    # the same records appended one at a time, with the size check after each
    reference = bytearray(b"prefix")
    key_list = [None] * len(pairs) if keys is None else keys.to_pylist()
    value_list = values.to_pylist()
    position, grown = start, size
    row_numbers = memoryview(rows).cast("i")
    while position < len(pairs):
        row = row_numbers[position]
        as_bytes = [None if x is None else x.encode() if isinstance(x, str) else x
                    for x in (key_list[row], value_list[row])]
        grown += record_builder.append_record_python(reference, timestamp_delta, offset_delta + position - start,
                                                     *as_bytes, None)
        position += 1
        if grown >= limit:
            break
    assert (end, added, body) == (position, len(reference) - 6, bytes(reference))


def test_a_batch_built_from_arrow_columns_decodes_to_its_rows():
    import array

    import pyarrow as pa
    keys, values = pa.array([b"k0", None, b"k2"]), pa.array(["v0", "v1", None])
    builder = BatchBuilder()
    rows = array.array("i", [2, 0, 1]).tobytes()
    assert builder.append_arrow(1000, record_builder.arrow_column(keys), record_builder.arrow_column(values), 3,
                                rows, 0, 1 << 20) == 3
    header, decoded = rec.decode_batch(builder.build(producer_id=3, producer_epoch=0, base_sequence=0))
    assert [(r.key, r.value, r.offset, r.timestamp) for r in decoded] == \
        [(b"k2", None, 0, 1000), (b"k0", b"v0", 1, 1000), (None, b"v1", 2, 1000)]
    assert builder.size == len(builder.build())


def test_the_arrow_encoders_refuse_offsets_outside_the_data():
    import array

    import pyarrow as pa
    good = record_builder.arrow_column(pa.array([b"abc"]))
    bad = (None, array.array("i", [0, 99]).tobytes(), good[2], 0, False)
    for append in (record_builder.append_arrow, record_builder.append_arrow_python):
        with pytest.raises(ValueError):
            append(bytearray(), 0, 0, None, bad, 1, array.array("i", [0]).tobytes(), 0, 61, 100)
        with pytest.raises(ValueError):  # a row number past the columns
            append(bytearray(), 0, 0, None, good, 1, array.array("i", [1]).tobytes(), 0, 61, 100)


appends = st.lists(st.tuples(st.integers(0, 2**41), blobs, blobs,
                             st.none() | st.lists(st.tuples(st.text(max_size=6), blobs), max_size=3),
                             st.integers(-1, 1200)), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(appends, st.integers(0, 100), st.sampled_from([0, 1, 300, 4096]))
def test_the_c_and_python_batch_bodies_take_and_refuse_the_same_records(calls, start_size, capacity):
    # BatchBody.try_append is the producer's per-record step: the size check decides where batches end;
    # capacity (how the memory grows) changes nothing of what a body holds
    bodies = [record_builder.BatchBody(start_size, capacity), record_builder.BatchBodyPython(start_size, capacity)]
    for timestamp, key, value, headers, limit in calls:
        answers = [body.try_append(timestamp, key, value, headers, limit) for body in bodies]
        assert answers[0] == answers[1]
        states = [(bytes(b.body), b.count, b.size, b.base_timestamp, b.max_timestamp) for b in bodies]
        assert states[0] == states[1]
        assert states[0][2] == start_size + len(states[0][0])
    assert bodies[0].count >= 1  # the first record always goes in, whatever the limit


def test_a_batch_body_refuses_a_record_past_its_limit_and_keeps_its_records():
    for body in (record_builder.BatchBody(61), record_builder.BatchBodyPython(61)):
        first = body.try_append(1000, None, b"a" * 100, None, 10)  # an empty body takes any record
        assert first > 100 and body.count == 1
        kept = bytes(body.body)
        assert body.try_append(999, b"k", b"b" * 100, None, 61 + first + 50) == -1
        assert (bytes(body.body), body.count, body.size, body.max_timestamp) == (kept, 1, 61 + first, 1000)
        assert body.try_append(1500, b"k", b"b", [("h", None)], 61 + first + 50) > 0
        assert (body.count, body.base_timestamp, body.max_timestamp) == (2, 1000, 1500)
        header, decoded = rec.decode_batch(_framed(body))
        assert [(r.timestamp, r.key, r.value, r.headers) for r in decoded] == \
            [(1000, None, b"a" * 100, []), (1500, b"k", b"b", [("h", None)])]


def _framed(body):
    builder = BatchBuilder()
    builder.body[:] = body.body  # the same records, framed by the builder
    builder.count, builder.size = body.count, body.size
    builder.base_timestamp, builder.max_timestamp = body.base_timestamp, body.max_timestamp
    return builder.build()


def test_the_batch_body_refuses_bad_arguments_as_the_encoder_does():
    for body in (record_builder.BatchBody(61), record_builder.BatchBodyPython(61)):
        with pytest.raises((TypeError, AttributeError)):
            body.try_append(0, None, b"v", [(b"name", b"x")], -1)
        assert body.count == 0 and body.body == bytearray() and body.size == 61


def test_a_batch_body_grows_in_its_memory_and_refuses_to_move_an_exported_body():
    for body in (record_builder.BatchBody(61, 1000), record_builder.BatchBodyPython(61, 1000)):
        assert body.body == bytearray() and len(body.body) == 0
        added = body.try_append(5, b"k", b"v" * 10, None, -1)
        assert len(body.body) == added and body.size == 61 + added
        view = memoryview(body.body)  # a consumer of the buffer pins it: the body may not change length
        with pytest.raises(BufferError):
            body.try_append(6, b"k", b"v", None, -1)
        view.release()
        assert body.count == 1 and body.try_append(6, b"k", b"v", None, -1) > 0
        assert body.try_append(7, None, b"x" * 5000, None, -1) > 5000  # past the capacity: grows to fit
        header, decoded = rec.decode_batch(_framed(body))
        assert [r.timestamp for r in decoded] == [5, 6, 7] and decoded[2].value == b"x" * 5000


def test_without_the_c_extension_the_batch_builder_runs_on_the_python_body():
    # a machine without a compiler at install time gets BatchBodyPython under BatchBuilder
    script = """
import sys
sys.modules["weir.protocol._record_encode"] = None  # the import fails as it does when it was never built
from weir.protocol import record_builder, records
from weir.protocol.record_builder import BatchBuilder, BatchBodyPython
assert not record_builder.ACCELERATED and issubclass(BatchBuilder, BatchBodyPython)
builder = BatchBuilder(capacity=4096)
assert builder.append(10, b"k", b"v") > 0
assert builder.try_append(12, None, b"w" * 200, [("h", b"1")], 100) == -1  # past the limit: refused
assert builder.try_append(11, None, b"w", [("h", b"1")], 4096) > 0
_, decoded = records.decode_batch(builder.build(producer_id=1, producer_epoch=0, base_sequence=0))
expected = [(10, b"k", b"v", []), (11, None, b"w", [("h", b"1")])]
assert [(r.timestamp, r.key, r.value, r.headers) for r in decoded] == expected
assert builder.size == len(builder.build())
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
