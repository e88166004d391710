"""One module per API key; importing this package registers them all."""

from . import (add_offsets_to_txn, add_partitions_to_txn, api_versions, create_topics,  # noqa: F401
               delete_topics, describe_configs, end_txn, fetch, find_coordinator, init_producer_id,
               list_offsets, metadata, offset_commit, offset_fetch, offset_for_leader_epoch, produce,
               txn_offset_commit, write_txn_markers)
