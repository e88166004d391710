"""The fault-injection control channel: a small HTTP listener any language's tests can call.

Off unless the broker was started with ``weir.faults.enable=true`` and
``weir.faults.listener=host:port``. Requests and answers are JSON:

    GET  /faults                 {"fired": {"Produce": 3}, "armed": [...], "paused": false, "disk_full": false}
    POST /faults/error           {"api": "Produce", "code": "NOT_LEADER_OR_FOLLOWER", "times": 3,
                                  "topic": "orders", "partition": 0}   (times, topic, partition optional)
    POST /faults/delay           {"api": "Produce", "seconds": 1.5, "times": 1}
    POST /faults/disconnect      {"api": "Fetch", "times": 1}
    POST /faults/clear | /faults/pause | /faults/resume | /faults/disk-full | /faults/disk-ok

A fault that cannot be armed is 400 with {"error": "..."} saying why (broker/faults.py checks it).

Authentication: with ``weir.faults.token`` set, every request must carry
``Authorization: Bearer <token>`` (401 otherwise). A token is required, and the broker refuses
to start without one, when the listener is not on a loopback address or when security is on
(a listener other than PLAINTEXT, or an authorizer): there the Kafka admin APIs need an
authenticated principal, and this channel, which can stop the broker answering, needs no less.
Like the metrics listener, it is served on the broker's own event loop, one request per
connection; it keeps answering while the broker is paused.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import socket
from typing import Any

from .config import ConfigError, parse_host_port
from .faults import FaultError, FaultTable
from .http_response import http_response

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 8192
MAX_BODY_BYTES = 65536
REQUEST_TIMEOUT_S = 10.0

_ACTIONS = {
    "error": lambda table, args: table.error(**args),
    "delay": lambda table, args: table.delay(**args),
    "disconnect": lambda table, args: table.disconnect(**args),
    "clear": lambda table, args: table.clear(),
    "pause": lambda table, args: table.pause(),
    "resume": lambda table, args: table.resume(),
    "disk-full": lambda table, args: table.disk_full(),
    "disk-ok": lambda table, args: table.disk_ok(),
}
_ARGUMENTS = {"error": {"api", "code", "times", "topic", "partition"}, "delay": {"api", "seconds", "times"},
              "disconnect": {"api", "times"}}


def _is_loopback(host: str) -> bool:
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback
                   for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP))
    except (OSError, ValueError):
        return False


class FaultsListener:
    def __init__(self, context, table: FaultTable | None):
        config = context.config
        self.host, self.port_wanted = parse_host_port(config["weir.faults.listener"])
        if table is None:
            raise ConfigError("weir.faults.listener needs weir.faults.enable=true")
        self.token: str = config["weir.faults.token"]
        secured = (any(spec.protocol != "PLAINTEXT" for spec in context.listeners) or context.authorizer.enabled)
        if not self.token and (secured or not _is_loopback(self.host)):
            raise ConfigError("weir.faults.listener off loopback or with security on needs weir.faults.token")
        self.table = table
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port_wanted, reuse_address=True,
                                                  limit=MAX_HEAD_BYTES)
        log.warning("fault injection control channel on http://%s:%d/faults (tests only)", self.host, self.port)

    @property
    def port(self) -> int:
        assert self._server is not None, "the faults listener is not started"
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")  # LimitOverrunError past MAX_HEAD_BYTES
                lines = head.decode("latin-1").split("\r\n")
                method, _, rest = lines[0].partition(" ")
                path = rest.split(" ", 1)[0].split("?", 1)[0]
                headers = {name.strip().lower(): value.strip()
                           for name, _, value in (line.partition(":") for line in lines[1:] if line)}
                length = int(headers.get("content-length", "0") or 0)
                if not 0 <= length <= MAX_BODY_BYTES:
                    raise ValueError("body too large")
                body = await reader.readexactly(length) if length else b""
            status, answer = self._answer(method, path, headers.get("authorization", ""), body)
            writer.write(http_response(status, _REASONS[status], (json.dumps(answer) + "\n").encode(),
                                   content_type="application/json"))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError, ValueError):
            pass
        except Exception:
            log.exception("fault injection control request failed")
            writer.write(http_response(500, "Internal Server Error", b'{"error": "internal error"}\n'))
        finally:
            writer.close()

    def _answer(self, method: str, path: str, authorization: str, body: bytes) -> tuple[int, Any]:
        if self.token and not hmac.compare_digest(authorization.encode(), f"Bearer {self.token}".encode()):
            return 401, {"error": "missing or wrong Authorization: Bearer <weir.faults.token>"}
        if path == "/faults":
            if method != "GET":
                return 405, {"error": "GET /faults; POST /faults/<action>"}
            table = self.table
            return 200, {"fired": table.fired(), "armed": table.armed(), "paused": table.paused,
                         "disk_full": table.disk_is_full}
        action = path.removeprefix("/faults/")
        if not path.startswith("/faults/") or action not in _ACTIONS:
            return 404, {"error": f"no such control; POST /faults/<{'|'.join(_ACTIONS)}>, GET /faults"}
        if method != "POST":
            return 405, {"error": f"POST /faults/{action}"}
        try:
            args = json.loads(body) if body.strip() else {}
        except ValueError:
            return 400, {"error": "the body is not JSON"}
        if not isinstance(args, dict):
            return 400, {"error": "the body must be a JSON object"}
        unknown = set(args) - _ARGUMENTS.get(action, set())
        if unknown:
            return 400, {"error": f"{action} takes no {', '.join(sorted(unknown))}"}
        try:
            _ACTIONS[action](self.table, args)
        except (FaultError, TypeError) as exc:
            return 400, {"error": str(exc)}
        return 200, {"ok": True}


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed"}
