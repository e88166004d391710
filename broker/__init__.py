"""Weir: a single-process broker that speaks the Apache Kafka wire protocol."""
