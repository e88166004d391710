"""A seeded mutator of Kafka request frames.

Given a ``random.Random`` and the corpus, ``plan`` returns the same list of
mutations for the same seed and corpus, so a failure replays exactly (and the
failing frame's bytes are printed anyway). Mutations stack 1-3 deep:
bit flips, byte replacements, truncation, extension, integer fields set to
absurd or negative sizes, varint corruption, splices of two frames, request
header corruption (api key, version, correlation id, client id length), and
corruption of the outer frame size. Half the Produce mutations change a record
batch (header fields, records, length) and fix its CRC, so they reach the
producer-state checks behind the CRC. Some frames are written in pieces, and
some are followed by an ApiVersions request that must then be answered in order.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

import crc32c

from weir.broker import handlers  # noqa: F401
from weir.broker.dispatcher import HANDLERS
from weir.protocol.api_keys import ApiKey
from weir.protocol.headers import decode_request_header
from weir.protocol.messages import BY_KEY, produce
from weir.protocol.primitives import DecodeError
from weir.protocol.records import CRC_START, HEADER_SIZE

from .corpus import Seed, advertised_pairs

MAX_FRAME = 104857600  # the broker's socket.request.max.bytes default
_INT16 = (0, 1, -1, -2, 0x7FFF, -0x8000, 0xFF, 0x100)
_INT32 = (0, 1, -1, -2, 0x7FFFFFFF, -0x80000000, 0x10000, 0xFFFFFF, MAX_FRAME, MAX_FRAME + 1)
_INT64 = (-1, 0, 2**32, 2**63 - 1, -2**63)
_VARINTS = (b"\xff" * 5, b"\xff" * 10 + b"\x01", b"\x80" * 11, b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x0f",
            b"\x00", b"\x01", b"\xff" * 9 + b"\x01", b"\x80\x80\x80\x80\x08", b"\xff\xff\x03")
_BYTES = (0x00, 0xFF, 0x7F, 0x80, 0x01)
#: RecordBatch header fields (name, offset, width) a produced batch can be given odd values in.
_BATCH_FIELDS = (("baseOffset", 0, 8), ("batchLength", 8, 4), ("partitionLeaderEpoch", 12, 4), ("magic", 16, 1),
                 ("attributes", 21, 2), ("lastOffsetDelta", 23, 4), ("baseTimestamp", 27, 8),
                 ("maxTimestamp", 35, 8), ("producerId", 43, 8), ("producerEpoch", 51, 2),
                 ("baseSequence", 53, 4), ("recordsCount", 57, 4))
_ATTRIBUTES = (0x10, 0x20, 0x30, 0x05, 0x07, 0x04, 0x08, 0x11, 0xFFFF)
SENTINEL_CORRELATION = 0x7EADBEEF
#: ApiVersions v0, whose answer carries SENTINEL_CORRELATION.
SENTINEL = struct.pack(">ihhih", 10, ApiKey.API_VERSIONS, 0, SENTINEL_CORRELATION, -1)
#: APIs whose answer may legitimately wait longer than a test can (long polls up to max_wait_ms, rebalance).
_MAY_WAIT = frozenset({ApiKey.FETCH, ApiKey.SHARE_FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP})


@dataclass(frozen=True)
class Mutation:
    index: int
    seed: Seed
    steps: tuple[str, ...]
    wire: bytes        # exactly the bytes sent, length prefix included
    may_wait: bool     # no answer within the deadline is legitimate for this frame
    chunks: tuple[int, ...] = ()  # offsets where the bytes are cut into separate writes
    sentinel: bool = False        # the wire ends with an ApiVersions request that must be answered unless closed

    def describe(self) -> str:
        return (f"mutation #{self.index} of {ApiKey(self.seed.api_key).name} v{self.seed.version} "
                f"({self.seed.origin}): {' + '.join(self.steps)}\nframe ({len(self.wire)} bytes): {self.wire.hex()}")


class Mutator:
    def __init__(self, rng: random.Random, corpus: list[Seed]):
        self.rng = rng
        self.corpus = corpus
        self.by_pair: dict[tuple[int, int], list[Seed]] = {}
        for seed in corpus:
            self.by_pair.setdefault((seed.api_key, seed.version), []).append(seed)

    def plan(self, count: int, per_pair: int) -> list[Mutation]:
        """``per_pair`` mutations of every advertised (key, version), the rest from the whole corpus, shuffled."""
        rng = self.rng
        seeds = [rng.choice(self.by_pair[pair]) for pair in advertised_pairs() for _ in range(per_pair)]
        seeds += [rng.choice(self.corpus) for _ in range(max(count - len(seeds), 0))]
        rng.shuffle(seeds)
        return [self.mutate(index, seed) for index, seed in enumerate(seeds)]

    def mutate(self, index: int, seed: Seed) -> Mutation:
        rng = self.rng
        data = bytearray(seed.payload)
        steps = []
        if seed.api_key == ApiKey.PRODUCE and rng.random() < 0.5:
            steps.append(self._batch(data, seed))  # past the CRC check, into the producer-state checks
        for _ in range(rng.choice((0, 1, 1, 2) if steps else (1, 1, 2, 3))):
            op = rng.choice((self._bit_flip, self._replace_bytes, self._truncate, self._extend, self._int_field,
                             self._int_field, self._varint, self._splice))
            steps.append(op(data))
        if rng.random() < 0.2:
            steps.append(self._header(data))
        payload = bytes(data)
        size = len(payload)
        if rng.random() < 0.1:
            size = rng.choice((-1, -2**31, 2**31 - 1, MAX_FRAME + 1, 0, max(size - rng.randint(1, 8), 0),
                               size + 1, size + rng.randint(2, 1000)))
            steps.append(f"frame size {len(payload)} -> {size}")
        wire = struct.pack(">i", size) + payload
        may_wait = _may_wait(payload, size)
        sentinel = not may_wait and size == len(payload) and rng.random() < 0.15
        if sentinel:  # the connection must still answer in order after the mutated request, or close
            wire += SENTINEL
            steps.append("then ApiVersions")
        chunks = ()
        if rng.random() < 0.1 and len(wire) > 1:
            chunks = tuple(sorted(rng.sample(range(1, len(wire)), min(rng.randint(1, 4), len(wire) - 1))))
            steps.append(f"written in pieces at {list(chunks)}")
        return Mutation(index, seed, tuple(steps), wire, may_wait, chunks, sentinel)

    # ------------------------------------------------------------------ operators (mutate in place, say what)

    def _bit_flip(self, data: bytearray) -> str:
        if not data:
            return "bit flip (empty)"
        positions = [self.rng.randrange(len(data) * 8) for _ in range(self.rng.randint(1, 8))]
        for bit in positions:
            data[bit // 8] ^= 1 << (bit % 8)
        return f"flip bits {positions}"

    def _replace_bytes(self, data: bytearray) -> str:
        if not data:
            return "replace (empty)"
        changes = []
        for _ in range(self.rng.randint(1, 4)):
            pos = self.rng.randrange(len(data))
            data[pos] = self.rng.choice(_BYTES + (self.rng.randrange(256),))
            changes.append(pos)
        return f"replace bytes at {changes}"

    def _truncate(self, data: bytearray) -> str:
        cut = self.rng.randrange(len(data)) if data else 0
        del data[cut:]
        return f"truncate to {cut}"

    def _extend(self, data: bytearray) -> str:
        if data and self.rng.random() < 0.5:
            start = self.rng.randrange(len(data))
            data += data[start:start + self.rng.randint(1, 256)]
            return f"repeat tail from {start}"
        extra = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 64)))
        data += extra
        return f"append {len(extra)} random bytes"

    def _int_field(self, data: bytearray) -> str:
        """An integer (length, count, size, id) overwritten with an absurd or negative value."""
        width, values = self.rng.choice(((2, _INT16), (4, _INT32 + (len(data), len(data) + 1)), (8, _INT64)))
        if len(data) < width:
            return "int field (too short)"
        pos = self.rng.randrange(len(data) - width + 1)
        value = self.rng.choice(values)
        data[pos:pos + width] = (value & ((1 << width * 8) - 1)).to_bytes(width, "big")
        return f"int{width * 8} at {pos} = {value}"

    def _varint(self, data: bytearray) -> str:
        junk = self.rng.choice(_VARINTS)
        pos = self.rng.randrange(len(data) + 1)
        if self.rng.random() < 0.5:
            data[pos:pos] = junk
            return f"insert varint {junk.hex()} at {pos}"
        data[pos:pos + len(junk)] = junk
        return f"varint {junk.hex()} over {pos}"

    def _splice(self, data: bytearray) -> str:
        other = self.rng.choice(self.corpus)
        cut = self.rng.randrange(len(data) + 1)
        start = self.rng.randrange(len(other.payload) + 1)
        data[cut:] = other.payload[start:]
        return f"splice at {cut} with {ApiKey(other.api_key).name} v{other.version} from {start}"

    def _batch(self, data: bytearray, seed: Seed) -> str:
        """Change one produced batch (a header field, its records, its length) and fix up its CRC."""
        rng = self.rng
        try:
            header, start = decode_request_header(memoryview(seed.payload))
            version = max(seed.version, produce.REQUEST.versions[0])  # v0-2 seeds carry a v3 body
            body = produce.REQUEST.decode(version, memoryview(seed.payload)[start:], exact=False)
        except (DecodeError, ValueError):
            return "batch (undecodable seed)"
        targets = [(t, p) for t in body.topic_data for p in t.partition_data
                   if p.records is not None and len(p.records) >= HEADER_SIZE]
        if not targets:
            return "batch (none)"
        topic, partition = rng.choice(targets)
        batch = bytearray(partition.records)
        choice = rng.random()
        if choice < 0.6:
            name, pos, width = rng.choice(_BATCH_FIELDS)
            value = rng.choice(_ATTRIBUTES if name == "attributes" else
                               {1: (0, 1, 2, 0xFF), 2: _INT16, 4: _INT32, 8: _INT64}[width])
            batch[pos:pos + width] = (value & ((1 << width * 8) - 1)).to_bytes(width, "big")
            what = f"{name} = {value}"
            if name in ("lastOffsetDelta", "recordsCount") and rng.random() < 0.5:
                partner, delta = (57, 1) if name == "lastOffsetDelta" else (23, -1)  # count = delta + 1
                batch[partner:partner + 4] = ((value + delta) & 0xFFFFFFFF).to_bytes(4, "big")
                what += " and its partner field to match"
        elif choice < 0.8:
            what = self._varint(batch) if rng.random() < 0.5 else self._bit_flip_records(batch)
        else:
            cut = rng.randrange(HEADER_SIZE, len(batch) + 64)
            batch = batch[:cut] + bytes(max(cut - len(batch), 0))
            if rng.random() < 0.7:
                batch[8:12] = struct.pack(">i", len(batch) - 12)
            what = f"records cut/padded to {cut}"
        if len(batch) >= CRC_START:
            batch[17:21] = struct.pack(">I", crc32c.crc32c(bytes(batch[CRC_START:])))
        partition.records = bytes(batch)
        data[:] = seed.payload[:start]
        produce.REQUEST.encode_into(data, version, body)
        return f"batch of {topic.name}[{partition.index}]: {what}, CRC fixed"

    def _bit_flip_records(self, batch: bytearray) -> str:
        positions = [self.rng.randrange(HEADER_SIZE * 8, len(batch) * 8) for _ in range(self.rng.randint(1, 4))] \
            if len(batch) > HEADER_SIZE else []
        for bit in positions:
            batch[bit // 8] ^= 1 << (bit % 8)
        return f"flip record bits {positions}"

    def _header(self, data: bytearray) -> str:
        if len(data) < 10:
            return "header (too short)"
        rng = self.rng
        field = rng.choice(("api_key", "api_key", "version", "version", "correlation", "client_id_length"))
        if field == "api_key":
            value = rng.choice((rng.choice(list(HANDLERS)), rng.randint(-2, 80), rng.choice(_INT16)))
            data[0:2] = struct.pack(">h", value)
        elif field == "version":
            value = rng.choice((rng.randint(-2, 16), rng.choice(_INT16)))
            data[2:4] = struct.pack(">h", value)
        elif field == "correlation":
            value = rng.choice(_INT32)
            data[4:8] = struct.pack(">i", value)
        else:
            value = rng.choice(_INT16 + (len(data), len(data) - 9))
            data[8:10] = struct.pack(">h", value)
        return f"header {field} = {value}"


def _may_wait(payload: bytes, size: int) -> bool:
    """True when the broker may rightly neither answer nor close soon."""
    if size < 0 or size > MAX_FRAME:
        return False  # refused before anything is read
    if size > len(payload):
        return True  # it waits for the rest of the frame, as Kafka does
    first = payload[:size]
    try:
        header, start = decode_request_header(memoryview(first))
    except DecodeError:
        return False
    if header.api_key in _MAY_WAIT:
        return True
    if header.api_key == ApiKey.PRODUCE:
        handler = HANDLERS[ApiKey.PRODUCE]
        if handler.min_version <= header.api_version <= handler.max_version:
            try:
                body = BY_KEY[ApiKey.PRODUCE].REQUEST.decode(header.api_version, memoryview(first)[start:],
                                                             exact=False)
            except Exception:  # undecodable: the connection is closed
                return False
            return body.acks == 0  # acks=0: no response, by the protocol
    return False
