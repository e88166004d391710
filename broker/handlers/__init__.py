"""One module per API key; importing this package registers them all."""

from . import (alter_share_group_offsets, delete_share_group_offsets, describe_share_group_offsets,  # noqa: F401
               share_acknowledge, share_fetch, share_group_describe, share_group_heartbeat)  # (KIP-932)
from . import streams_group_describe, streams_group_heartbeat  # noqa: F401  (KIP-1071)
from . import (add_offsets_to_txn, add_partitions_to_txn, alter_configs, api_versions,  # noqa: F401
               consumer_group_describe, consumer_group_heartbeat,
               create_partitions, create_topics, delete_groups, delete_records, delete_topics, describe_cluster,
               describe_configs, describe_groups, describe_producers, describe_topic_partitions,
               describe_transactions, end_txn, fetch, find_coordinator, heartbeat, incremental_alter_configs,
               init_producer_id, join_group, leave_group, list_groups, list_offsets, list_transactions, metadata,
               offset_commit, offset_delete, offset_fetch, offset_for_leader_epoch, produce, sync_group,
               txn_offset_commit, update_features, write_txn_markers)
from . import (alter_user_scram_credentials, describe_client_quotas, describe_user_scram_credentials,  # noqa: F401
               sasl_authenticate, sasl_handshake)
from . import create_acls, delete_acls, describe_acls  # noqa: F401 (broker/acl)
from . import alter_partition_reassignments, describe_log_dirs, elect_leaders  # noqa: F401 (ops tools)
from . import alter_client_quotas, list_partition_reassignments  # noqa: F401
from . import get_telemetry_subscriptions, list_config_resources, push_telemetry  # noqa: F401 (KIP-714)
from . import (create_delegation_token, describe_delegation_token, expire_delegation_token,  # noqa: F401
               renew_delegation_token)
