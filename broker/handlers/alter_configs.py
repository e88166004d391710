"""AlterConfigs (33), v0-2, for TOPIC and BROKER resources.

The legacy API: the configs given become the resource's whole set, so a
topic override or dynamic broker setting left out is removed (Kafka's
``legacyAlterConfigs``). Checks, errors and ``validate_only`` are shared with
IncrementalAlterConfigs (``_alter_configs``). Changes are persisted (topic:
each partition's metadata file; broker: the dynamic config file) and take
effect on the live partitions at once.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import alter_configs as msg

from ..dispatcher import handles
from ._alter_configs import alter, refuse_nulls


def _replaced(current, resource, resource_type):
    refuse_nulls([c.name for c in resource.configs if c.value is None])
    return {c.name: c.value for c in resource.configs}


@handles(ApiKey.ALTER_CONFIGS, versions=(0, 2))
def handle(context, header, request, session=None):
    return msg.RESPONSE(responses=alter(context, request, _replaced, msg.ResourceResponse, session))
