"""Round trips for every (API, version) we serve, golden bytes of real client frames, framing limits."""

import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.broker import handlers  # noqa: F401  (registers the served versions)
from weir.broker.dispatcher import HANDLERS
from weir.protocol import primitives as p
from weir.protocol.connection import ClientConnection, ServerConnection
from weir.protocol.framing import FrameError, FrameReader
from weir.protocol.headers import decode_request_header
from weir.protocol.messages import BY_KEY, api_versions, delete_groups
from tests.broker_process import FAST_ONLY

from .strategies import instances

SERVED = [(key, version, message) for key, handler in sorted(HANDLERS.items())
          for version in range(handler.min_version, handler.max_version + 1)
          for message in (BY_KEY[key].REQUEST, BY_KEY[key].RESPONSE)]


# 466 message versions: ``make test`` draws 40 instances of each, ``make test-fast`` (its minute, of
# which these took two thirds at 40) draws 20; every version is still drawn in both
EXAMPLES = 20 if os.environ.get(FAST_ONLY) else 40


@pytest.mark.parametrize("api_key,version,message", SERVED,
                         ids=[f"{m.name}-v{v}" for _, v, m in SERVED])
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_every_served_version_round_trips(api_key, version, message, data):
    value = data.draw(instances(message, version))
    encoded = message.encode(version, value)
    assert message.decode(version, encoded) == value
    assert message.encode(version, message.decode(version, encoded)) == encoded


@given(st.integers(0, 2**64 - 1))
def test_uvarint_round_trip(value):
    out = bytearray()
    p.write_uvarint(out, value)
    assert p.read_uvarint(bytes(out), 0) == (value, len(out))


@given(st.integers(-2**63, 2**63 - 1))
def test_zigzag_varint_round_trip_and_size(value):
    out = bytearray()
    p.write_varint(out, value)
    assert p.read_varint(bytes(out), 0) == (value, len(out))
    assert p.zigzag_size(value) == len(out)


def test_varint_edge_encodings():
    out = bytearray()
    p.write_varint(out, -1)
    p.write_uvarint(out, 300)
    assert bytes(out) == b"\x01\xac\x02"
    with pytest.raises(p.DecodeError):
        p.read_uvarint(b"\xff" * 11, 0)


# Captured from the clients' first frame on connect.
LIBRDKAFKA_API_VERSIONS_V3 = bytes.fromhex(
    "0000003f00120003000000010006676f6c64656e0017636f6e666c75656e742d6b61666b612d707974686f6e"
    "16322e31362e312d72646b61666b612d322e31362e3000")
AIOKAFKA_API_VERSIONS_V0 = bytes.fromhex("0000001000120000000000010006676f6c64656e")


def test_golden_librdkafka_api_versions_request():
    [request] = ServerConnection().receive_data(LIBRDKAFKA_API_VERSIONS_V3)
    assert (request.header.api_key, request.header.api_version, request.header.correlation_id) == (18, 3, 1)
    assert request.header.client_id == "golden"
    body = api_versions.REQUEST.decode(3, request.body)
    assert body.client_software_name == "confluent-kafka-python"
    assert body.client_software_version == "2.16.1-rdkafka-2.16.0"
    client = ClientConnection("golden")
    client._next_correlation = 1
    assert client.send_request(18, 3, body) == LIBRDKAFKA_API_VERSIONS_V3


def test_golden_aiokafka_api_versions_request_split_across_reads():
    server = ServerConnection()
    assert server.receive_data(AIOKAFKA_API_VERSIONS_V0[:3]) == []
    [request] = server.receive_data(AIOKAFKA_API_VERSIONS_V0[3:])
    assert (request.header.api_version, request.header.client_id, bytes(request.body)) == (0, "golden", b"")


def test_golden_api_versions_response_uses_header_v0_even_when_flexible():
    header, _ = decode_request_header(memoryview(LIBRDKAFKA_API_VERSIONS_V3[4:]))
    body = api_versions.RESPONSE(error_code=35, api_keys=[api_versions.ApiVersion(api_key=18, min_version=0,
                                                                                  max_version=4)])
    assert ServerConnection.encode_response(header, 0, api_versions.RESPONSE, body) == bytes.fromhex(
        "00000010" "00000001" "0023" "00000001" "0012" "0000" "0004")
    flexible = ServerConnection.encode_response(header, 3, api_versions.RESPONSE, body)
    assert flexible[4:8] == b"\x00\x00\x00\x01" and flexible[8:10] == b"\x00\x23", "no tagged header byte"


@pytest.mark.parametrize("size", [-1, -2**31, 101, 2**31 - 1])
def test_frame_size_is_refused_before_allocation(size):
    reader = FrameReader(max_frame_size=100)
    with pytest.raises(FrameError):
        reader.feed(struct.pack(">i", size) + b"tail")
    assert reader.buffered == 0, "nothing of the refused frame is kept"


@given(st.lists(st.binary(max_size=50), max_size=5), st.integers(1, 7))
def test_frames_reassemble_from_any_split(payloads, step):
    stream = b"".join(struct.pack(">i", len(x)) + x for x in payloads)
    reader = FrameReader(1000)
    frames = []
    for i in range(0, len(stream), step):
        frames += reader.feed(stream[i:i + step])
    assert [bytes(f) for f in frames] == payloads


def _delete_groups_v2_body(count: int, tagged_fields: int = 0) -> bytes:
    """A flexible DeleteGroups request claiming ``count`` group names, each the empty string."""
    out = bytearray()
    p.write_uvarint(out, count + 1)
    out += b"\x01" * count  # compact strings of length 0
    p.write_uvarint(out, tagged_fields)
    for tag in range(tagged_fields):
        p.write_uvarint(out, tag + 100)  # tags nobody declares: skipped when read
        p.write_uvarint(out, 0)
    return bytes(out)


def test_arrays_and_tagged_sections_are_bounded_as_in_kafka_4_4():
    # Kafka 4.4's readers refuse more than 1,000,000 elements in an array and 10,000 tagged
    # fields in a section, whatever the frame's size: both limits themselves still read.
    assert len(delete_groups.REQUEST.decode(2, _delete_groups_v2_body(p.MAX_ARRAY_ELEMENTS)).groups_names) \
        == p.MAX_ARRAY_ELEMENTS
    with pytest.raises(p.DecodeError, match="exceeds 1000000"):
        delete_groups.REQUEST.decode(2, _delete_groups_v2_body(p.MAX_ARRAY_ELEMENTS + 1))
    delete_groups.REQUEST.decode(2, _delete_groups_v2_body(1, tagged_fields=p.MAX_TAGGED_FIELDS))
    with pytest.raises(p.DecodeError, match="exceed 10000"):
        delete_groups.REQUEST.decode(2, _delete_groups_v2_body(1, tagged_fields=p.MAX_TAGGED_FIELDS + 1))
