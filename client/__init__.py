"""Weir's async Kafka client, built on the same sans-IO codec as the broker.

For now it holds the connection layer; Producer, Consumer and Admin grow on it.
"""

from .connection import Connection

__all__ = ["Connection"]
