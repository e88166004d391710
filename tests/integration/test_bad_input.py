"""Malformed frames, unknown APIs and absurd sizes close one connection; the broker keeps serving."""

import asyncio
import struct

import pytest

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import api_versions, metadata, produce
from weir.protocol.records import Record, encode_batch


async def raw_exchange(broker, payload: bytes, read: int = 4096, timeout: float = 5.0) -> bytes:
    """Send raw bytes; return whatever comes back before the broker closes (b'' = closed)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
    writer.write(payload)
    await writer.drain()
    try:
        async with asyncio.timeout(timeout):
            data = await reader.read(read)
    finally:
        writer.close()
    return data


async def assert_still_serving(broker):
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        response = await conn.request(ApiKey.API_VERSIONS, 3, api_versions.REQUEST())
        assert response.error_code == 0
    finally:
        await conn.close()


def header(api_key, version, correlation_id=7, client_id=b"raw"):
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


async def test_negative_and_oversize_frame_lengths_close_the_connection(broker):
    assert await raw_exchange(broker, struct.pack(">i", -5) + b"xxxx") == b""
    assert await raw_exchange(broker, struct.pack(">i", 2_000_000_000)) == b""
    assert broker.wait_for_log("outside [0, 104857600]")
    await assert_still_serving(broker)


async def test_truncated_and_garbage_bodies_close_the_connection(broker):
    body = header(ApiKey.METADATA, 4) + b"\x00\x00\x00\x05ab"  # array of 5 topics, then 2 bytes
    assert await raw_exchange(broker, struct.pack(">i", len(body)) + body) == b""
    garbage = b"\x00\x03\x00"  # shorter than a request header
    assert await raw_exchange(broker, struct.pack(">i", len(garbage)) + garbage) == b""
    await assert_still_serving(broker)


async def test_unknown_api_key_and_unsupported_version_close_the_connection(broker):
    for api_key, version in ((9999, 0), (ApiKey.METADATA, 99), (ApiKey.PRODUCE, 2)):
        frame = header(api_key, version)
        assert await raw_exchange(broker, struct.pack(">i", len(frame)) + frame) == b""
    assert broker.wait_for_log("unknown api key 9999")
    await assert_still_serving(broker)


@pytest.mark.parametrize("version", [77, -1, -32768])
async def test_unsupported_api_versions_request_is_answered_in_v0_with_unsupported_version(broker, version):
    # Kafka answers any ApiVersions version outside [0, latest] this way (RequestContext), negative ones too.
    frame = header(ApiKey.API_VERSIONS, version, correlation_id=42) + b"\x00"
    data = await raw_exchange(broker, struct.pack(">i", len(frame)) + frame)
    size, correlation_id = struct.unpack_from(">ii", data)
    assert correlation_id == 42 and size == len(data) - 4
    body = api_versions.RESPONSE.decode(0, memoryview(data)[8:])
    assert body.error_code == Errors.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 5)]  # v5: Kafka 4.4


async def test_corrupt_batch_gets_corrupt_message_and_nothing_is_written(broker, topic_name):
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        good = encode_batch([Record(b"ok")])
        bad = bytearray(encode_batch([Record(b"tampered")]))
        bad[-1] ^= 0xFF
        response = await conn.request(ApiKey.PRODUCE, 9, produce_request(topic_name, bytes(bad)))
        answer = response.responses[0].partition_responses[0]
        assert answer.error_code == Errors.CORRUPT_MESSAGE
        response = await conn.request(ApiKey.PRODUCE, 9, produce_request(topic_name, good))
        assert response.responses[0].partition_responses[0].base_offset == 0
    finally:
        await conn.close()


def produce_request(topic, batch, acks=-1, partition=0):
    return produce.REQUEST(acks=acks, timeout_ms=1000, topic_data=[
        produce.TopicData(name=topic, partition_data=[produce.PartitionData(index=partition, records=batch)])])


async def test_oversize_batch_and_two_batches_get_their_error_codes(broker, topic_name):
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        await conn.request(ApiKey.METADATA, 9, metadata.REQUEST(topics=[metadata.RequestTopic(name=topic_name)]))
        huge = encode_batch([Record(b"x" * 1_100_000)])
        response = await conn.request(ApiKey.PRODUCE, 9, produce_request(topic_name, huge))
        assert response.responses[0].partition_responses[0].error_code == Errors.MESSAGE_TOO_LARGE
        two = encode_batch([Record(b"a")]) + encode_batch([Record(b"b")])
        response = await conn.request(ApiKey.PRODUCE, 9, produce_request(topic_name, two))
        assert response.responses[0].partition_responses[0].error_code == Errors.INVALID_RECORD
    finally:
        await conn.close()
