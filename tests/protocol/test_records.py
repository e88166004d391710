"""RecordBatch v2: the hand-written header codec agrees with its construct declaration; records round trip."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.broker.log.index import OFFSET_ENTRY, TIME_ENTRY, OffsetEntry, TimeEntry
from weir.protocol import records as rec
from weir.protocol.compression import Compression, compress, decompress
from weir.protocol.primitives import DecodeError

FIELD_RANGES = {
    "base_offset": (-2**63, 2**63 - 1), "batch_length": (-2**31, 2**31 - 1),
    "partition_leader_epoch": (-2**31, 2**31 - 1), "magic": (-128, 127), "crc": (0, 2**32 - 1),
    "attributes": (-2**15, 2**15 - 1), "last_offset_delta": (-2**31, 2**31 - 1),
    "base_timestamp": (-2**63, 2**63 - 1), "max_timestamp": (-2**63, 2**63 - 1),
    "producer_id": (-2**63, 2**63 - 1), "producer_epoch": (-2**15, 2**15 - 1),
    "base_sequence": (-2**31, 2**31 - 1), "records_count": (-2**31, 2**31 - 1),
}
headers = st.fixed_dictionaries({name: st.integers(lo, hi) for name, (lo, hi) in FIELD_RANGES.items()})


@given(headers)
def test_batch_header_struct_matches_construct_declaration(values):
    packed = rec.BATCH_HEADER.pack(*(values[name] for name in FIELD_RANGES))
    assert packed == rec.BatchHeaderFormat.build(values)
    parsed = rec.BatchHeaderFormat.parse(packed)
    assert rec.read_header(packed)._asdict() == {k: parsed[k] for k in values}
    assert rec.HEADER_SIZE == rec.BatchHeaderFormat.sizeof() == 61


@given(st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1))
def test_index_entry_structs_match_construct_declarations(relative, position, timestamp):
    assert OFFSET_ENTRY.pack(relative, position) == OffsetEntry.build({"relative_offset": relative,
                                                                       "position": position})
    assert TIME_ENTRY.pack(timestamp, relative) == TimeEntry.build({"timestamp": timestamp,
                                                                    "relative_offset": relative})


record_lists = st.lists(st.builds(
    rec.Record,
    value=st.none() | st.binary(max_size=200),
    key=st.none() | st.binary(max_size=20),
    headers=st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3),
    timestamp=st.integers(0, 2**41)), min_size=1, max_size=20)


@settings(deadline=None)
@given(record_lists, st.sampled_from(list(Compression)), st.integers(0, 2**40))
def test_batches_round_trip_with_every_codec(records, codec, base_offset):
    batch = rec.encode_batch(records, base_offset=base_offset, compression=codec, producer_id=7,
                             producer_epoch=1, base_sequence=100)
    header, decoded = rec.decode_batch(batch)
    assert header.compression == codec and header.records_count == len(records)
    assert header.last_sequence == 100 + len(records) - 1 and header.size == len(batch)
    assert [(r.key, r.value, r.headers) for r in decoded] == [(r.key, r.value, r.headers) for r in records]
    assert [r.offset for r in decoded] == list(range(base_offset, base_offset + len(records)))


@given(st.binary(max_size=100_000), st.sampled_from(list(Compression)))
def test_compression_round_trip(data, codec):
    assert decompress(codec, compress(codec, data)) == data


def test_crc_detects_tampering_but_not_restamped_offset_and_epoch():
    batch = bytearray(rec.encode_batch([rec.Record(b"value")]))
    header = rec.read_header(batch)
    batch[0:8] = (12345).to_bytes(8, "big")  # baseOffset and leader epoch are outside the CRC
    batch[12:16] = (3).to_bytes(4, "big")
    assert rec.crc_ok(batch, 0, header)
    batch[-1] ^= 1
    assert not rec.crc_ok(batch, 0, header)
    with pytest.raises(DecodeError):
        rec.decode_batch(bytes(batch))


def test_control_record_round_trip():
    marker = rec.encode_control_batch(commit=True, producer_id=9, producer_epoch=2, coordinator_epoch=5,
                                      timestamp=1000)
    header, [record] = rec.decode_batch(marker)
    assert header.is_control and header.is_transactional and header.base_sequence == -1
    assert rec.decode_control_record(record) == (rec.CONTROL_COMMIT, 5)


def test_sequence_wraps_past_int32_max():
    assert rec.increment_sequence(2**31 - 1, 1) == 0
    assert rec.increment_sequence(2**31 - 3, 5) == 2
    assert rec.increment_sequence(10, 5) == 15


def test_lz4_frames_are_the_kind_the_java_client_reads():
    """Kafka's Lz4BlockInputStream refuses a frame whose FLG byte lacks block independence
    ("Dependent block stream is unsupported") and, like its writer, uses 64 KiB blocks."""
    data = bytes(range(256)) * 1000  # several blocks
    frame = compress(Compression.LZ4, data)
    assert frame[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flg, bd = frame[4], frame[5]
    assert flg >> 6 == 0b01  # version
    assert flg & 0x20  # blocks independent
    assert not flg & 0x08 and not flg & 0x04  # no content size, no content checksum
    assert (bd >> 4) & 0x7 == 4  # 64 KiB maximum block size
    assert decompress(Compression.LZ4, frame) == data
