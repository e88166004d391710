"""Weir's Kafka wire protocol: pure codecs, no I/O (sans-IO)."""
