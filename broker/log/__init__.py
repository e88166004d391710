"""Segment-file log store: partitions, segments, indexes, producer state."""
