"""Request header v1/v2 and response header v0/v1.

The header version follows from (api_key, api_version): v2 when that version of
the API is flexible. ``client_id`` keeps its int16 length even in v2, so any
broker can read the header of any ApiVersions request (KIP-511).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import primitives as p
from .api_keys import ApiKey
from .messages import BY_KEY

_FIXED = p.INT16.size * 2 + p.INT32.size


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str = ""


def is_flexible(api_key: int, api_version: int) -> bool | None:
    """Whether this (key, version) uses flexible encoding; None for unknown keys.

    The "N+" rule holds past the highest declared version, which is how an
    ApiVersions request newer than ours is still read with header v2.
    """
    module = BY_KEY.get(api_key)
    if module is None:
        return None
    flexible = module.REQUEST.flexible
    return flexible is not None and api_version >= flexible[0]


def peek_key_and_version(frame: p.ReadBuffer) -> tuple[int, int, int]:
    """api_key, api_version and correlation_id, readable before anything else."""
    if len(frame) < _FIXED:
        raise p.DecodeError("frame shorter than a request header")
    return (p.INT16.unpack_from(frame, 0)[0], p.INT16.unpack_from(frame, 2)[0],
            p.INT32.unpack_from(frame, 4)[0])


def decode_request_header(frame: p.ReadBuffer) -> tuple[RequestHeader, int]:
    """Parse the header; return it and the offset where the body starts."""
    api_key, api_version, correlation_id = peek_key_and_version(frame)
    pos = _FIXED
    length = p.INT16.unpack_from(frame, pos)[0] if len(frame) >= pos + 2 else None
    if length is None:
        raise p.DecodeError("truncated client_id")
    pos += 2
    client_id = ""
    if length >= 0:
        raw, pos = p.take(frame, pos, length)
        client_id = str(raw, "utf-8", "replace")
    if is_flexible(api_key, api_version):
        count, pos = p.read_uvarint(frame, pos)
        for _ in range(count):
            _tag, pos = p.read_uvarint(frame, pos)
            size, pos = p.read_uvarint(frame, pos)
            pos += size
        if pos > len(frame):
            raise p.DecodeError("truncated header tagged fields")
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def encode_request_header(out: bytearray, header: RequestHeader) -> None:
    out += p.INT16.pack(header.api_key)
    out += p.INT16.pack(header.api_version)
    out += p.INT32.pack(header.correlation_id)
    client_id = header.client_id.encode("utf-8")
    out += p.INT16.pack(len(client_id))
    out += client_id
    if is_flexible(header.api_key, header.api_version):
        out.append(0)


def response_header_flexible(api_key: int, api_version: int) -> bool:
    """Response header v1 for flexible versions, except ApiVersions (always v0)."""
    return api_key != ApiKey.API_VERSIONS and bool(is_flexible(api_key, api_version))
