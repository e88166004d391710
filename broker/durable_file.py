"""Replacing a small file durably, under the name its users import: the implementation is the
disk layer's (broker/log/disk.py), so a failure there is the data directory's state and answers
KAFKA_STORAGE_ERROR like every other write."""

from .log.disk import fsync_directory, replace_durably

__all__ = ["fsync_directory", "replace_durably"]
