"""Types of the C record encoder (protocol/_record_encode.c); protocol/record_builder.py documents it."""

from collections.abc import Sequence

from typing_extensions import Buffer

from .record_builder import ArrowColumn

def append_record(body: bytearray, timestamp_delta: int, offset_delta: int, key: bytes | None,
                  value: bytes | None, headers: Sequence[tuple[str, bytes | None]] | None, /) -> int: ...
def append_arrow(body: bytearray, timestamp_delta: int, offset_delta: int, keys: ArrowColumn,
                 values: ArrowColumn, length: int, rows: Buffer, start: int, size: int, limit: int,
                 /) -> tuple[int, int]: ...

class BatchBody:
    body: bytearray
    base_timestamp: int
    max_timestamp: int
    count: int
    size: int
    def __init__(self, size: int, capacity: int = 0) -> None: ...
    def try_append(self, timestamp: int, key: bytes | None, value: bytes | None,
                   headers: Sequence[tuple[str, bytes | None]] | None, limit: int, /) -> int: ...
