"""The quota manager's broker settings, under Kafka's names (merged into broker/config.py's table)."""

from __future__ import annotations


def _positive_int(text: str) -> int:
    value = int(text.strip())
    if value < 1:
        raise ValueError("must be at least 1")
    return value


QUOTA_SETTINGS = {
    "quota.window.num": (_positive_int, 11, "samples kept in memory for client quotas"),
    "quota.window.size.seconds": (_positive_int, 1, "time span of each client quota sample"),
}
