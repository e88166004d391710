"""The HTTP client of a broker's fault-injection control channel (broker/faults_listener.py).

Used by ``weir-admin faults`` (client/cli_faults.py) and by the test brokers' ``faults``
(weir/testing/faults.py), and a model for other languages' tests: a JSON POST per control.
Plain ``urllib``: it must keep working while the broker it controls answers no Kafka request.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

TIMEOUT_S = 30.0


class FaultRefused(ValueError):
    """The broker refused a fault (HTTP 400); the message says why."""


class FaultControl:
    """``error()``, ``delay()``, ``disconnect()``, ``fired()``, ``armed()``, ``state()``, ``clear()``,
    ``pause()``, ``resume()``, ``disk_full()``, ``disk_ok()`` of the broker at ``url`` (http://host:port)."""

    def __init__(self, url: str, token: str = ""):
        self.url = url.rstrip("/")
        self.token = token

    def error(self, api: str, code: str, times: int = 1, topic: str | None = None,
              partition: int | None = None) -> None:
        self._call("POST", "error", {"api": api, "code": code, "times": times, "topic": topic, "partition": partition})

    def delay(self, api: str, seconds: float, times: int = 1) -> None:
        self._call("POST", "delay", {"api": api, "seconds": seconds, "times": times})

    def disconnect(self, api: str, times: int = 1) -> None:
        self._call("POST", "disconnect", {"api": api, "times": times})

    def fired(self) -> dict[str, int]:
        fired: dict[str, int] = self.state()["fired"]
        return fired

    def armed(self) -> list[dict[str, Any]]:
        armed: list[dict[str, Any]] = self.state()["armed"]
        return armed

    def state(self) -> dict[str, Any]:
        """``{"fired": {api: count}, "armed": [...], "paused": bool, "disk_full": bool}``."""
        state: dict[str, Any] = self._call("GET", "", None)
        return state

    def clear(self) -> None:
        self._call("POST", "clear", {})

    def pause(self) -> None:
        self._call("POST", "pause", {})

    def resume(self) -> None:
        self._call("POST", "resume", {})

    def disk_full(self) -> None:
        self._call("POST", "disk-full", {})

    def disk_ok(self) -> None:
        self._call("POST", "disk-ok", {})

    def _call(self, method: str, action: str, args: dict[str, Any] | None) -> Any:
        url = f"{self.url}/faults" + (f"/{action}" if action else "")
        data = None if args is None else json.dumps({k: v for k, v in args.items() if v is not None}).encode()
        request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            try:
                reason = json.loads(exc.read())["error"]
            except (ValueError, KeyError, TypeError):
                reason = exc.reason
            if exc.code == 400:
                raise FaultRefused(reason) from None
            raise ConnectionError(f"fault control {method} {url}: HTTP {exc.code}: {reason}") from None
