"""Whole batches of one segment for a fetch: read into bytes, or by reference (a region).

Both start at the batch holding the fetch offset (``Segment.position_of``) and stop
before the first batch at or past ``bound`` (high watermark or last stable offset)
or past ``max_bytes`` (KIP-74: with ``min_one`` the first batch whatever its size).
"""

from __future__ import annotations

import bisect

from weir.protocol import records as rec

from .segment import Segment, SegmentRegion

WALK_CHUNK = 4096  # header walk past the last index entry that fits: an index interval's worth


def read_bytes(segment: Segment, found: tuple[int, rec.BatchHeader], offset: int, max_bytes: int,
               bound: int, min_one: bool) -> tuple[bytes | memoryview, int]:
    start, first = found
    if first.base_offset >= bound or (first.size > max_bytes and not min_one):
        return b"", offset
    length = min(max(max_bytes, first.size), segment.size - start)
    data = segment.read(start, length)
    end = 0
    end_offset = offset
    for position, header in rec.iter_headers(data):
        if header.base_offset >= bound:
            break
        end = position + header.size
        end_offset = header.last_offset + 1
    return (memoryview(data)[:end] if end < len(data) else data), end_offset


def region_of(segment: Segment, found: tuple[int, rec.BatchHeader], offset: int, max_bytes: int,
              bound: int, min_one: bool) -> tuple[SegmentRegion | bytes, int]:
    """As ``read_bytes``, without reading the records: the batch boundaries come from
    the offset index and a walk over the headers after its last entry that fits."""
    start, first = found
    if first.base_offset >= bound or (first.size > max_bytes and not min_one):
        return b"", offset
    limit = min(start + max(max_bytes, first.size), segment.size)
    end, end_offset = start, offset
    index = segment.offset_index
    # The last indexed batch that starts in range and below the bound: every batch before it fits.
    i = min(bisect.bisect_right(index.values, limit), bisect.bisect_right(index.keys, bound)) - 1
    if i >= 0 and index.values[i] > start:
        end, end_offset = index.values[i], index.keys[i]
    for batch in segment.scan(end, chunk_size=WALK_CHUNK):
        header = batch.header
        if header.base_offset >= bound or batch.position + header.size > limit:
            break
        end = batch.position + header.size
        end_offset = header.last_offset + 1
    return (segment.region(start, end - start) if end > start else b""), end_offset
