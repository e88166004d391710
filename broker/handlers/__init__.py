"""One module per API key; importing this package registers them all."""

from . import (add_offsets_to_txn, add_partitions_to_txn, api_versions, create_topics,  # noqa: F401
               delete_groups, delete_topics, describe_configs, describe_groups, end_txn, fetch, find_coordinator,
               heartbeat, init_producer_id, join_group, leave_group, list_groups, list_offsets, metadata,
               offset_commit, offset_delete, offset_fetch, offset_for_leader_epoch, produce, sync_group,
               txn_offset_commit, write_txn_markers)
