"""The consumer's C record walk and its pure-Python reference agree on every input, valid or not,
and both give back what the encoder wrote."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.protocol import record_decode
from weir.protocol import records as rec
from weir.protocol.primitives import DecodeError
from weir.protocol.record_builder import BatchBuilder

WALKS = [record_decode.decode_python, record_decode.decode]


def test_the_c_walk_is_built():
    # `make test` installs with a compiler present; a missing build costs most of a consumer's speed.
    assert record_decode.ACCELERATED


record_strategy = st.builds(
    rec.Record,
    value=st.none() | st.binary(max_size=300),
    key=st.none() | st.binary(max_size=20),
    headers=st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=3),
    timestamp=st.integers(0, 2**41))


def _outcome(walk, data, count, base_offset=0, base_timestamp=0, log_append_time=None):
    try:
        return walk(data, count, base_offset, base_timestamp, log_append_time)
    except ValueError as exc:  # DecodeError, or UnicodeDecodeError for a header name
        return type(exc) is UnicodeDecodeError


@settings(max_examples=300, deadline=None)
@given(st.lists(record_strategy, min_size=1, max_size=8), st.integers(0, 2**62), st.none() | st.integers(0, 2**41))
def test_valid_records_decode_alike_and_as_written(records, base_offset, log_append_time):
    body = rec.encode_batch(records)[rec.HEADER_SIZE:]
    base = records[0].timestamp
    expected = [(base_offset + i, r.timestamp if log_append_time is None else log_append_time,
                 r.key, r.value, list(r.headers)) for i, r in enumerate(records)]
    for walk in WALKS:
        assert walk(body, len(records), base_offset, base, log_append_time) == expected
        assert walk(memoryview(bytearray(body)), len(records), base_offset, base, log_append_time) == expected


@settings(max_examples=500, deadline=None)
@given(st.lists(record_strategy, min_size=1, max_size=4), st.data())
def test_mutated_records_decode_alike(records, data):
    body = bytearray(rec.encode_batch(records)[rec.HEADER_SIZE:])
    for _ in range(data.draw(st.integers(1, 4))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(body)))
    count = data.draw(st.integers(0, len(records) + 1))
    base_offset = data.draw(st.sampled_from([0, 2**63 - 1, -(2**63)]))
    mutated = bytes(body[:cut])
    assert _outcome(record_decode.decode, mutated, count, base_offset) == \
        _outcome(record_decode.decode_python, mutated, count, base_offset)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 3))
def test_arbitrary_bytes_decode_alike(data, count):
    assert _outcome(record_decode.decode, data, count) == _outcome(record_decode.decode_python, data, count)


@pytest.mark.parametrize("walk", WALKS)
def test_faults(walk):
    with pytest.raises(DecodeError, match="truncated"):
        walk(b"\x0a\x00", 1, 0, 0, None)
    with pytest.raises(DecodeError, match="longer than 10 bytes"):
        walk(b"\xff" * 11, 1, 0, 0, None)
    builder = BatchBuilder()
    builder.append(5, b"k", b"v")
    body = bytearray(builder.body)
    body[0] += 2  # declares one more byte than its fields take
    with pytest.raises(DecodeError, match="length does not match"):
        walk(bytes(body) + b"\x00", 1, 0, 5, None)


# ---------------------------------------------------------------- decode_into: record objects, not tuples

INTO_WALKS = [record_decode.decode_into_python, record_decode.decode_into]


def _into(walk, data, count, base_offset=0, base_timestamp=0, log_append_time=None, position=0):
    """The records as plain tuples of their fields, or what the walk raised."""
    from weir.client.types import ConsumerRecord
    out: list = []
    try:
        walk(out, ConsumerRecord, data, count, base_offset, base_timestamp, log_append_time, position,
             "topic", 7, 1, 3)
    except ValueError as exc:  # DecodeError, or UnicodeDecodeError for a header name
        return type(exc) is UnicodeDecodeError
    return [(r.topic, r.partition, r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers,
             r.leader_epoch) for r in out]


@settings(max_examples=300, deadline=None)
@given(st.lists(record_strategy, min_size=1, max_size=8), st.integers(0, 2**62), st.none() | st.integers(0, 2**41),
       st.integers(0, 9))
def test_records_into_objects_alike_and_as_written(records, base_offset, log_append_time, skipped):
    body = rec.encode_batch(records)[rec.HEADER_SIZE:]
    base = records[0].timestamp
    expected = [("topic", 7, base_offset + i, r.timestamp if log_append_time is None else log_append_time, 1,
                 r.key, r.value, list(r.headers), 3) for i, r in enumerate(records)][skipped:]
    for walk in INTO_WALKS:
        assert _into(walk, body, len(records), base_offset, base, log_append_time, base_offset + skipped) == expected


@settings(max_examples=500, deadline=None)
@given(st.lists(record_strategy, min_size=1, max_size=4), st.data())
def test_mutated_records_into_objects_alike(records, data):
    body = bytearray(rec.encode_batch(records)[rec.HEADER_SIZE:])
    for _ in range(data.draw(st.integers(1, 4))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(body)))
    count = data.draw(st.integers(0, len(records) + 1))
    base_offset = data.draw(st.sampled_from([0, 2**63 - 1, -(2**63)]))
    log_append_time = data.draw(st.none() | st.just(5))
    mutated = bytes(body[:cut])
    assert _into(record_decode.decode_into, mutated, count, base_offset, 0, log_append_time) == \
        _into(record_decode.decode_into_python, mutated, count, base_offset, 0, log_append_time)


def test_into_objects_refuses_a_type_without_the_slots():
    class Plain:
        pass
    body = rec.encode_batch([rec.Record(b"v", timestamp=1)])[rec.HEADER_SIZE:]
    with pytest.raises(TypeError, match="slot"):
        record_decode.decode_into([], Plain, body, 1, 0, 1, None, 0, "t", 0, 0, -1)


def test_c_records_stay_out_of_the_cyclic_collector():
    # a consumer holds hundreds of thousands of records: collections walking them cost a quarter of its CPU
    import gc

    from weir.client.types import ConsumerRecord
    out: list = []
    body = rec.encode_batch([rec.Record(b"v", headers=[("h", b"x")], timestamp=1)])[rec.HEADER_SIZE:]
    record_decode.decode_into(out, ConsumerRecord, body, 1, 0, 1, None, 0, "t", 0, 0, -1)
    assert out[0].headers == [("h", b"x")] and out[0].value == b"v"
    assert not gc.is_tracked(out[0]) and not gc.is_tracked(out[0].headers)
