"""kcat 1.7 (librdkafka 2.0.2): the old-librdkafka feature checks and compression trap (KAFKA-18659)."""

import shutil
import subprocess

import pytest

from weir.protocol.compression import Compression
from weir.protocol.records import iter_headers

from .test_confluent_kafka import consume_all, create_topic


def kcat(*args, stdin=None):
    result = subprocess.run(["kcat", *args], input=stdin, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def test_kcat_is_installed():
    assert shutil.which("kcat"), "make test installs kcat (Debian package)"


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kcat_produces_compressed_and_consumes(shared_broker, topic_name, codec):
    create_topic(shared_broker.bootstrap, topic_name, 1)
    lines = b"".join(f"line-{i}\n".encode() for i in range(500))
    kcat("-b", shared_broker.bootstrap, "-P", "-t", topic_name, "-z", codec, stdin=lines)
    out = kcat("-b", shared_broker.bootstrap, "-C", "-t", topic_name, "-o", "beginning", "-e", "-q")
    assert out == lines
    # The stored batches really are compressed: old librdkafka did not fall back to none. It does
    # send a batch uncompressed when compressing would not shrink it, which a batch of a line or
    # two can be when kcat's first read of stdin is short (seen about one run in twelve).
    segment = next((shared_broker.data_dir / f"{topic_name}-0").glob("*.log")).read_bytes()
    batches = [(header.compression, header.records_count) for _, header in iter_headers(segment)]
    assert {compression for compression, _ in batches} <= {Compression[codec.upper()], Compression.NONE}
    assert all(count < 10 for compression, count in batches if compression is Compression.NONE), batches
    assert sum(count for compression, count in batches if compression is not Compression.NONE) > 400, batches
    assert len(consume_all(shared_broker.bootstrap, topic_name, 1, 500)) == 500
