"""The control channel of a child broker's fault injection, as its runner starts and finds it.

Kept apart from faults.py (which imports the broker's fault table and the channel's client) so
that starting a broker and reading its log import nothing of either: ``run_broker()`` builds
its command line and watches for the channel's log line on the way to the ready line.
"""

from __future__ import annotations

#: The log line a child broker writes once its control channel listens (broker/faults_listener.py).
CHANNEL_LINE = "fault injection control channel on http://"


def control_settings(token: str) -> dict[str, str]:
    """The settings that start a broker with its control channel on a loopback port of its choice."""
    return {"weir.faults.enable": "true", "weir.faults.listener": "127.0.0.1:0", "weir.faults.token": token}


def channel_url(log_line: str) -> str:
    """``http://host:port`` from the broker's log line announcing the channel."""
    start = log_line.index(CHANNEL_LINE) + len("fault injection control channel on ")
    return log_line[start:].split()[0].removesuffix("/faults")
