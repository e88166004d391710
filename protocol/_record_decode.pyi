"""Types of the C consumer walk (protocol/_record_decode.c); protocol/record_decode.py documents it."""

from typing import Any

from typing_extensions import Buffer

from .record_decode import DecodedRecord

def decode(records: Buffer, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None,
           /) -> list[DecodedRecord]: ...
def decode_into(out: list[Any], record_type: type, records: Buffer, count: int, base_offset: int, base_timestamp: int,
                log_append_time: int | None, position: int, topic: str, partition: int, timestamp_type: int,
                leader_epoch: int, /) -> None: ...
