"""Every codec round-trips; with a bound, decompression refuses to expand past it without holding more."""

import subprocess
import sys
from pathlib import Path

import pytest

from weir.protocol.compression import Compression, DecompressedTooLarge, compress, decompress

REPO = Path(__file__).resolve().parents[2]
CODECS = [c for c in Compression if c is not Compression.NONE]
PAYLOAD = b"".join(b"record %d of a compressible batch; " % i for i in range(5000))


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
def test_round_trip_with_and_without_a_bound(codec):
    packed = compress(codec, PAYLOAD)
    assert decompress(codec, packed) == PAYLOAD
    assert decompress(codec, packed, max_size=len(PAYLOAD)) == PAYLOAD  # exactly at the bound fits


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_one_byte_past_the_bound_is_refused(codec):
    with pytest.raises(DecompressedTooLarge):
        decompress(codec, compress(codec, PAYLOAD), max_size=len(PAYLOAD) - 1)


# Run in a fresh interpreter, whose peak memory says what the refusal cost: the bomb (256 MiB of
# zeros) is built a MiB at a time, so only an expansion could raise the peak past the bound.
_BOMB_SCRIPT = """
import resource, sys, cramjam, lz4.frame
from weir.protocol.compression import Compression, DecompressedTooLarge, decompress, _XERIAL_HEADER, _BLOCK_LEN
codec, bound = Compression[sys.argv[1]], int(sys.argv[2])
chunk, chunks = bytes(1 << 20), 256
if codec is Compression.SNAPPY:
    block = bytes(cramjam.snappy.compress_raw(bytes(32 * 1024)))
    bomb = _XERIAL_HEADER + (_BLOCK_LEN.pack(len(block)) + block) * (chunks * 32)
elif codec is Compression.LZ4:
    writer = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)
    bomb = writer.begin() + b"".join(writer.compress(chunk) for _ in range(chunks)) + writer.flush()
else:
    writer = getattr(cramjam, codec.name.lower()).Compressor()
    for _ in range(chunks):
        writer.compress(chunk)
    bomb = bytes(writer.finish())
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    decompress(codec, bomb, max_size=bound)
except DecompressedTooLarge:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("bound", [1 << 20, 32 << 20], ids=["scratch", "mapped"])  # below and above the scratch
def test_a_bomb_is_refused_without_expanding_it(codec, bound):
    result = subprocess.run([sys.executable, "-c", _BOMB_SCRIPT, codec.name, str(bound)],
                            capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0 and result.stdout.strip(), result.stderr or "the bomb was not refused"
    grown_kib = int(result.stdout)
    assert grown_kib < (bound >> 10) + 16 * 1024, f"peak memory grew {grown_kib} KiB refusing a 256 MiB bomb"


def test_concatenated_zstd_frames_count_toward_the_bound_as_one_payload():
    frame = compress(Compression.ZSTD, bytes(8 << 20))  # 2 KB expanding to 8 MiB
    with pytest.raises(DecompressedTooLarge):
        decompress(Compression.ZSTD, frame * 1000, max_size=64 << 20)  # 8 GB, were it expanded
    assert decompress(Compression.ZSTD, frame * 2, max_size=16 << 20) == bytes(16 << 20)


def test_corrupt_input_is_not_mistaken_for_a_bomb():
    packed = bytearray(compress(Compression.ZSTD, PAYLOAD))
    packed[len(packed) // 2] ^= 0xFF
    with pytest.raises(Exception) as caught:
        decompress(Compression.ZSTD, bytes(packed), max_size=len(PAYLOAD))
    assert not isinstance(caught.value, DecompressedTooLarge)
