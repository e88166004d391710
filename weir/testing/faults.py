"""Fault injection from a test: ``broker.faults`` and ``pause()``/``disk_full()`` of the test brokers.

    with weir.run_broker() as broker:
        broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", times=3)
        ...                                       # the producer retries three times
        assert broker.faults.fired() == {"Produce": 3}
        broker.pause(); ...; broker.resume()      # the broker stops answering, then carries on
        broker.disk_full(); ...; broker.disk_ok() # writes fail with KAFKA_STORAGE_ERROR, reads go on

The brokers of ``weir.testing`` start with fault injection on (``weir.faults.enable``): a
``weir.Broker`` drives its table in-process, a child-process broker (``run_broker()``, the
``weir_broker`` fixture, ``WeirContainer``) over its control channel (broker/faults_listener.py),
the one other languages' tests use too. A fault that cannot be armed (unknown API or error name,
an error Kafka never answers for that API, times below 1) raises ``FaultError`` here, in the test.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from weir.broker.faults import FaultError, make_delay, make_disconnect, make_error

__all__ = ["FaultControl", "FaultError", "control_settings"]

#: The log line a child broker writes once its control channel listens (broker/faults_listener.py).
CHANNEL_LINE = "fault injection control channel on http://"
TIMEOUT_S = 30.0


def control_settings(token: str) -> dict[str, str]:
    """The settings that start a broker with its control channel on a loopback port of its choice."""
    return {"weir.faults.enable": "true", "weir.faults.listener": "127.0.0.1:0", "weir.faults.token": token}


def channel_url(log_line: str) -> str:
    """``http://host:port`` from the broker's log line announcing the channel."""
    start = log_line.index(CHANNEL_LINE) + len("fault injection control channel on ")
    return log_line[start:].split()[0].removesuffix("/faults")


class FaultControl:
    """``broker.faults`` of a child-process broker: the control channel's HTTP client.

    The same methods as the in-process table (broker/faults.py's ``FaultTable``); arguments are
    checked here first, so a bad fault fails in the test without a round trip.
    """

    def __init__(self, url: str, token: str = ""):
        self.url = url.rstrip("/")
        self.token = token

    def error(self, api: str, code: str, times: int = 1, topic: str | None = None,
              partition: int | None = None) -> None:
        make_error(api, code, times, topic, partition)
        self._call("POST", "error", {"api": api, "code": code, "times": times, "topic": topic, "partition": partition})

    def delay(self, api: str, seconds: float, times: int = 1) -> None:
        make_delay(api, seconds, times)
        self._call("POST", "delay", {"api": api, "seconds": seconds, "times": times})

    def disconnect(self, api: str, times: int = 1) -> None:
        make_disconnect(api, times)
        self._call("POST", "disconnect", {"api": api, "times": times})

    def fired(self) -> dict[str, int]:
        fired: dict[str, int] = self.state()["fired"]
        return fired

    def armed(self) -> list[dict[str, Any]]:
        armed: list[dict[str, Any]] = self.state()["armed"]
        return armed

    def state(self) -> dict[str, Any]:
        """``{"fired": ..., "armed": [...], "paused": bool, "disk_full": bool}``."""
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
                raise FaultError(reason) from None
            raise RuntimeError(f"fault control {method} {url}: {exc.code} {reason}") from None
