"""Types of the C record walk (protocol/_record_scan.c); protocol/record_scan.py documents it."""

from typing_extensions import Buffer

def scan(records: Buffer, count: int, /) -> tuple[int, int, int, bool]:
    """(min timestamp delta, max timestamp delta, records without a key, offset deltas sequential?)"""
