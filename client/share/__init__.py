"""Share groups (KIP-932) for this client: ``ShareConsumer``."""

from .consumer import ShareConsumer, ShareRecord

__all__ = ["ShareConsumer", "ShareRecord"]
