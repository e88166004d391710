"""One HTTP/1.1 answer, as the broker's small side listeners (metrics, fault control) write them.

Its own module so the fault-control listener, on every test broker's way to ready, does not
import the metrics listener and prometheus_client with it.
"""

from __future__ import annotations


def http_response(status: int, reason: str, body: bytes, *, content_type: str = "text/plain; charset=utf-8",
                  extra: str = "", head_only: bool = False) -> bytes:
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n{extra}\r\n")
    return head.encode("latin-1") + (b"" if head_only else body)
