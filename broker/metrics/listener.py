"""The opt-in HTTP listener (``metrics.listener``) answering ``GET /metrics``.

A deliberately tiny HTTP/1.1 server on the broker's own event loop, so the
scrape reads coordinator state without locks: one request per connection,
answered and closed. Anything other than GET /metrics gets 404 or 405; a
request head that is too long or too slow gets the connection closed.
"""

from __future__ import annotations

import asyncio
import logging

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from ..config import parse_host_port
from ..http_response import http_response
from ..telemetry.collector import TelemetryCollector
from .collector import BrokerCollector
from .loop_lag import LoopLagMonitor

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 8192
HEAD_TIMEOUT_S = 10.0


class MetricsListener:
    def __init__(self, context, server=None):
        self.host, self.port_wanted = parse_host_port(context.config["metrics.listener"])
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(context, context.metrics, server))
        self.registry.register(TelemetryCollector(context.telemetry_receiver, context.clock))  # KIP-714 pushes
        ProcessCollector(registry=self.registry)  # process_open_fds (/proc/self/fd), memory, cpu
        self.loop_lag = LoopLagMonitor()
        self.registry.register(self.loop_lag)
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port_wanted, reuse_address=True,
                                                  limit=MAX_HEAD_BYTES)
        self.loop_lag.start()
        log.info("metrics listener on http://%s:%d/metrics", self.host, self.port)

    @property
    def port(self) -> int:
        """The port bound (``start`` has run)."""
        assert self._server is not None, "the metrics listener is not started"
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def stop(self) -> None:
        await self.loop_lag.stop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(HEAD_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")  # LimitOverrunError past MAX_HEAD_BYTES
            method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
            path = rest.split(" ", 1)[0].split("?", 1)[0]
            if path != "/metrics":
                writer.write(http_response(404, "Not Found", b"not found; try /metrics\n"))
            elif method not in ("GET", "HEAD"):
                writer.write(http_response(405, "Method Not Allowed", b"GET only\n", extra="Allow: GET, HEAD\r\n"))
            else:
                body = generate_latest(self.registry)
                writer.write(http_response(200, "OK", body, content_type=CONTENT_TYPE_LATEST,
                                           head_only=method == "HEAD"))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        except Exception:
            log.exception("metrics scrape failed")
            writer.write(http_response(500, "Internal Server Error", b"scrape failed\n"))
        finally:
            writer.close()
