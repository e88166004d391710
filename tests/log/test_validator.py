"""Produce-side record validation (broker/log/validator.py) through Partition.validate_client_batch."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.broker.log import time_lookup
from weir.broker.log.validator import RecordValidationError, TopicPolicy, validate_records
from weir.protocol import records as rec
from weir.protocol.compression import Compression
from weir.protocol.errors import Errors, KafkaError
from tests.log.poison import NOW, POISON_CODES, batch, good, poison_batches, record
from tests.log.test_partition import open_partition, read_values, submit

HOUR = 3_600_000


def refusal(partition, data, now=NOW):
    with pytest.raises(KafkaError) as err:
        partition.validate_client_batch(memoryview(data), 9, now)
    return err.value


@pytest.mark.parametrize("kind", sorted(POISON_CODES))
def test_every_poison_kind_is_refused_with_kafkas_code(tmp_path, kind):
    error = refusal(open_partition(tmp_path), poison_batches()[kind])
    assert error.error.name == POISON_CODES[kind]
    assert not isinstance(error, RecordValidationError), "framing errors carry no record_errors, as in Kafka"


def test_good_batches_pass_and_are_stored_untouched(tmp_path):
    p = open_partition(tmp_path)
    data = good(b"a", b"b", b"c")
    validated = p.validate_client_batch(memoryview(data), 9, NOW)
    assert bytes(validated.batch) == data and validated.log_append_time_ms == -1
    submit(p, validated.batch, validated.header)
    assert read_values(p) == [b"a", b"b", b"c"]


def test_null_key_on_a_compacted_topic_lists_every_keyless_record(tmp_path):
    p = open_partition(tmp_path, **{"cleanup.policy": "compact,delete"})
    data = batch(record(0, key=None) + record(1) + record(2, key=None), 3)
    error = refusal(p, data)
    assert isinstance(error, RecordValidationError) and error.error == Errors.INVALID_RECORD
    message = "Compacted topic cannot accept message without key in topic partition t-0"
    assert error.record_errors == [(0, message), (2, message)]
    assert error.message == ("One or more records have been rejected due to 2 record errors in total, and only "
                             "showing the first three errors at most: "
                             f"[RecordError(batchIndex=0, message='{message}'), "
                             f"RecordError(batchIndex=2, message='{message}')]")
    delete_topic = open_partition(tmp_path / "d")
    assert delete_topic.validate_client_batch(memoryview(data), 9, NOW).header.records_count == 3


def test_timestamps_outside_before_and_after_bounds(tmp_path):
    p = open_partition(tmp_path, **{"message.timestamp.before.max.ms": 60_000})
    data = batch(record(0, timestamp_delta=0) + record(1, timestamp_delta=2 * HOUR), 2, base_timestamp=NOW)
    error = refusal(p, data)
    assert isinstance(error, RecordValidationError) and error.error == Errors.INVALID_TIMESTAMP
    assert error.message == "One or more records have been rejected due to invalid timestamp"
    assert error.record_errors == [(1, f"Timestamp {NOW + 2 * HOUR} of message with offset 1 is out of range. "
                                       f"The timestamp should be within [{NOW - 60_000}, {NOW + HOUR}]")]
    old = batch(record(0), 1, base_timestamp=NOW - 60_001)
    assert [i for i, _ in refusal(p, old).record_errors] == [0]
    at_bounds = batch(record(0) + record(1, timestamp_delta=60_000 + HOUR), 2, base_timestamp=NOW - 60_000)
    assert p.validate_client_batch(memoryview(at_bounds), 9, NOW).header.max_timestamp == NOW + HOUR
    no_timestamp = batch(record(0), 1, base_timestamp=-1)
    assert p.validate_client_batch(memoryview(no_timestamp), 9, NOW).header.records_count == 1


def test_kafka_4_defaults_allow_any_past_and_one_hour_ahead(tmp_path):
    p = open_partition(tmp_path)
    assert p.validate_client_batch(memoryview(batch(record(0), 1, base_timestamp=0)), 9, NOW)
    assert refusal(p, batch(record(0), 1, base_timestamp=NOW + HOUR + 1)).error == Errors.INVALID_TIMESTAMP


def test_keyless_and_out_of_bounds_records_name_the_key_first(tmp_path):
    p = open_partition(tmp_path, **{"cleanup.policy": "compact"})
    data = batch(record(0, key=None, timestamp_delta=2 * HOUR) + record(1, timestamp_delta=2 * HOUR), 2)
    error = refusal(p, data)
    assert error.error == Errors.INVALID_TIMESTAMP, "any timestamp error makes the batch INVALID_TIMESTAMP"
    assert [(i, m.split()[0]) for i, m in error.record_errors] == [(0, "Compacted"), (1, "Timestamp")]


def test_wrong_header_max_timestamp_is_corrected_with_a_new_crc(tmp_path):
    p = open_partition(tmp_path)
    data = batch(record(0) + record(1, timestamp_delta=500), 2, max_timestamp=NOW + 99)
    validated = p.validate_client_batch(memoryview(data), 9, NOW)
    assert validated.header.max_timestamp == NOW + 500
    assert rec.crc_ok(validated.batch, 0, validated.header)


def test_log_append_time_topic_stamps_max_timestamp_and_the_attribute(tmp_path):
    p = open_partition(tmp_path, **{"message.timestamp.type": "LogAppendTime"})
    data = batch(record(0) + record(1, timestamp_delta=7), 2, base_timestamp=NOW - 10 * HOUR)
    validated = p.validate_client_batch(memoryview(data), 9, NOW)
    header = validated.header
    assert validated.log_append_time_ms == NOW and header.max_timestamp == NOW
    assert header.attributes & rec.TIMESTAMP_TYPE_FLAG and header.base_timestamp == NOW - 10 * HOUR
    assert rec.crc_ok(validated.batch, 0, header)
    result = submit(p, validated.batch, header)
    assert (result.base_offset, result.log_append_time_ms) == (0, -1), "submit() passes no append time"
    _, decoded = rec.decode_batch(p.read(0, 10**6).records)
    assert [r.timestamp for r in decoded] == [NOW, NOW], "records of a LogAppendTime batch read maxTimestamp"
    assert time_lookup.offset_for_timestamp(p, NOW - HOUR) == (0, NOW), "ListOffsets by time finds the append time"
    idempotent = batch(record(0), 1, producer_id=4, base_sequence=0)
    first = p.validate_client_batch(memoryview(idempotent), 9, NOW + 1)
    assert submit(p, first.batch, first.header, first.log_append_time_ms).log_append_time_ms == NOW + 1
    retry = p.validate_client_batch(memoryview(idempotent), 9, NOW + 50)
    answer = submit(p, retry.batch, retry.header, retry.log_append_time_ms)
    assert (answer.base_offset, answer.log_append_time_ms) == (2, NOW + 1), "a retry gets the original append time"
    refused = refusal(p, batch(record(0), 1, attributes=rec.TIMESTAMP_TYPE_FLAG))
    assert refused.error == Errors.INVALID_TIMESTAMP
    assert refused.record_errors[0][1].endswith("Producer should not set timestamp type to LogAppendTime.")


@pytest.mark.parametrize("topic_codec,target", [("zstd", Compression.ZSTD), ("uncompressed", Compression.NONE),
                                                ("gzip", Compression.GZIP), ("snappy", Compression.SNAPPY)])
def test_topic_codec_recompresses_keeping_producer_fields(tmp_path, topic_codec, target):
    p = open_partition(tmp_path, **{"compression.type": topic_codec})
    records = [rec.Record(b"v%d" % i, key=b"k", headers=[("h", b"x")], timestamp=NOW + i) for i in range(50)]
    data = rec.encode_batch(records, compression=Compression.LZ4, producer_id=9, producer_epoch=2,
                            base_sequence=40, transactional=True)
    validated = p.validate_client_batch(memoryview(data), 9, NOW)
    header, before = validated.header, rec.read_header(data)
    assert header.compression == target and rec.crc_ok(validated.batch, 0, header)
    assert header._replace(crc=0, attributes=0, batch_length=0) == before._replace(crc=0, attributes=0,
                                                                                  batch_length=0)
    assert header.is_transactional
    _, decoded = rec.decode_batch(validated.batch)
    assert [(r.key, r.value, r.headers, r.timestamp, r.offset) for r in decoded] == [
        (b"k", b"v%d" % i, [("h", b"x")], NOW + i, i) for i in range(50)]


def test_same_codec_or_producer_keeps_the_batch_as_sent(tmp_path):
    data = rec.encode_batch([rec.Record(b"v", timestamp=NOW)], compression=Compression.ZSTD)
    for codec in ("zstd", "producer"):
        p = open_partition(tmp_path / codec, **{"compression.type": codec})
        assert bytes(p.validate_client_batch(memoryview(data), 9, NOW).batch) == data


def test_recompressed_batch_over_max_message_bytes_is_refused(tmp_path):
    p = open_partition(tmp_path, **{"compression.type": "uncompressed", "max.message.bytes": 2000})
    data = rec.encode_batch([rec.Record(b"x" * 10_000, timestamp=NOW)], compression=Compression.ZSTD)
    assert refusal(p, data).error == Errors.MESSAGE_TOO_LARGE


def test_idempotent_batch_without_sequence_and_nonzero_base_offset_are_refused(tmp_path):
    p = open_partition(tmp_path)
    assert refusal(p, batch(record(0), 1, producer_id=3, base_sequence=-1)).error == Errors.INVALID_RECORD
    assert refusal(p, rec.encode_batch([rec.Record(b"v")], base_offset=5)).error == Errors.INVALID_RECORD


def test_compression_levels_are_used(tmp_path):
    data = rec.encode_batch([rec.Record(bytes(range(256)) * 40, timestamp=NOW)])
    sizes = {}
    for level in (1, 19):
        p = open_partition(tmp_path / str(level), **{"compression.type": "zstd", "compression.zstd.level": level})
        sizes[level] = len(p.validate_client_batch(memoryview(data), 9, NOW).batch)
    assert sizes[19] <= sizes[1]
    assert TopicPolicy.of({"compression.type": "gzip", "compression.gzip.level": 9}).level == 9


def test_a_topic_bounds_what_a_compressed_batch_decompresses_to():
    # max.decompressed.message.bytes (Kafka 4.4): INVALID_RECORD past the topic's bound, as Kafka answers
    records = [rec.Record(value=bytes(100)) for _ in range(10)]
    data = rec.encode_batch(records, compression=Compression.GZIP)
    header = rec.read_header(data)
    policy = TopicPolicy.of({"max.decompressed.message.bytes": 2000})
    assert validate_records(memoryview(data), header, NOW, policy, "t-0", 10**9).header.records_count == 10
    with pytest.raises(KafkaError) as refused:
        validate_records(memoryview(data), header, NOW, TopicPolicy.of({"max.decompressed.message.bytes": 500}),
                         "t-0", 10**9)
    assert refused.value.error == Errors.INVALID_RECORD


policy_any_codec = st.builds(TopicPolicy, compacted=st.just(False), log_append_time=st.booleans(),
                             before_max_ms=st.just(2**63 - 1), after_max_ms=st.just(2**63 - 1),
                             target=st.none() | st.sampled_from(list(Compression)), level=st.none(),
                             max_decompressed_bytes=st.just(2147483639))
record_lists = st.lists(st.builds(
    rec.Record, value=st.none() | st.binary(max_size=300), key=st.none() | st.binary(max_size=20),
    headers=st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3),
    timestamp=st.integers(-1, 2**41)), min_size=1, max_size=40)


@settings(deadline=None, max_examples=150)
@given(record_lists, st.sampled_from(list(Compression)), policy_any_codec)
def test_every_batch_our_encoder_writes_validates(records, codec, policy):
    data = rec.encode_batch(records, compression=codec, producer_id=1, producer_epoch=0, base_sequence=0)
    header = rec.read_header(data)
    validated = validate_records(memoryview(data), header, NOW, policy, "t-0", 10**9)
    stored = validated.header
    assert rec.crc_ok(validated.batch, 0, stored)
    assert stored.compression == (codec if policy.target is None else policy.target)
    _, decoded = rec.decode_batch(validated.batch)
    assert [(r.key, r.value, r.headers) for r in decoded] == [(r.key, r.value, r.headers) for r in records]
    if policy.log_append_time:
        assert stored.max_timestamp == NOW and stored.attributes & rec.TIMESTAMP_TYPE_FLAG
    else:
        assert stored.max_timestamp == max(r.timestamp for r in decoded)
