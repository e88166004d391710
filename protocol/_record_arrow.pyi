"""Types of the C Arrow walk (protocol/_record_arrow.c); protocol/record_arrow.py documents it."""

from typing import Any

from typing_extensions import Buffer

class RecordColumns:
    rows: int
    def add(self, body: Buffer, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None,
            timestamp_type: int, position: int, limit: int, /) -> int: ...
    def reserve(self, nbytes: int, /) -> None: ...
    def finish(self) -> dict[str, Any]: ...

def frame(size: int, /) -> Buffer: ...
