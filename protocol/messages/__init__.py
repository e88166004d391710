"""Request and response schemas, one module per API key."""

from . import (api_versions, create_topics, delete_topics, describe_configs, fetch, find_coordinator,
               init_producer_id, list_offsets, metadata, offset_for_leader_epoch, produce)

#: api key -> module with REQUEST and RESPONSE
BY_KEY = {module.REQUEST.api_key: module for module in (
    api_versions, create_topics, delete_topics, describe_configs, fetch, find_coordinator,
    init_producer_id, list_offsets, metadata, offset_for_leader_epoch, produce)}
