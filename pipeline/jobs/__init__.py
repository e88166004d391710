"""Spark jobs over Weir (or Kafka) topics: ``orders`` (streaming, exactly once) and ``topic_batch``."""
