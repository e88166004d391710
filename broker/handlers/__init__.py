"""One module per API key; importing this package registers them all."""

from . import (api_versions, create_topics, delete_topics, describe_configs, fetch,  # noqa: F401
               find_coordinator, init_producer_id, list_offsets, metadata, offset_for_leader_epoch, produce)
