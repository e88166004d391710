"""FrameReader memory: a peer trickling bytes costs about a byte per byte received."""

import struct
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from weir.protocol.framing import FrameReader


def test_a_frame_trickled_one_byte_per_read_costs_about_a_byte_per_byte():
    frame_size = 10_000
    readers = [FrameReader(1 << 20) for _ in range(10)]
    data = struct.pack(">i", frame_size) + b"x" * (frame_size - 1)  # one byte short of complete
    stream = [data[i:i + 1] for i in range(len(data))]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for piece in stream:
            for reader in readers:
                assert reader.feed(piece) == []
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    received = len(readers) * (frame_size - 1)
    assert all(reader.buffered == frame_size - 1 for reader in readers)
    # A bytearray over-allocates by an eighth or so; one object per read would be hundreds of bytes each.
    assert held < 1.5 * received, f"{held / received:.1f} bytes held per byte received"


def test_a_trickled_frame_completes_intact_and_a_whole_one_stays_a_view():
    payload = bytes(range(256)) * 4
    stream = struct.pack(">i", len(payload)) + payload
    reader = FrameReader(4096)
    frames = []
    for i in range(len(stream)):
        frames += reader.feed(stream[i:i + 1])
    assert [bytes(f) for f in frames] == [payload] and reader.buffered == 0
    data = stream + stream
    whole = reader.feed(data)
    assert [bytes(f) for f in whole] == [payload, payload]
    assert all(isinstance(f, memoryview) and f.obj is data for f in whole), "a frame read whole is not copied"


@given(st.lists(st.binary(min_size=0, max_size=30_000), min_size=1, max_size=4),
       st.lists(st.integers(1, 20_000), min_size=1, max_size=30))
@settings(max_examples=60, deadline=None)
def test_large_frames_reassemble_from_any_chunking(payloads, cuts):
    """Chunks big enough to be kept as views and small ones copied, mixed in one frame."""
    stream = b"".join(struct.pack(">i", len(x)) + x for x in payloads)
    reader = FrameReader(1 << 20)
    frames, pos, i = [], 0, 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        frames += reader.feed(bytes(stream[pos:pos + step]))
        pos, i = pos + step, i + 1
    assert [bytes(f) for f in frames] == payloads and reader.buffered == 0
