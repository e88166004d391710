"""ListConfigResources (74), v0-1 (v0 was ListClientMetricsResources, KIP-714; v1 KIP-1142).

v0 lists the client-metrics subscriptions; v1 lists the config resources of the types asked
for (all when none is named): CLIENT_METRICS subscriptions, TOPIC names (internal ones too),
this BROKER's id, GROUP ids (live groups of every type and groups with configs). An unknown type
is UNSUPPORTED_VERSION, as Kafka 4.4.0 answers. Kafka also lists BROKER_LOGGER (this node's id);
Weir has no loggers as config resources (DescribeConfigs refuses them) and lists none. Needs
DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED), as Kafka.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import list_config_resources as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..group.configs import GROUP
from ..telemetry.subscriptions import CLIENT_METRICS

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
_KNOWN = (CLIENT_METRICS, TOPIC, BROKER, BROKER_LOGGER, GROUP)


@handles(ApiKey.LIST_CONFIG_RESOURCES, versions=(0, 1))
def handle(context, header, request, session=None):
    authorizer = context.authorizer
    if authorizer.enabled and not authorizer.allows_cluster(session, acl.DESCRIBE_CONFIGS):
        return msg.RESPONSE(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED)
    types = [CLIENT_METRICS] if header.api_version == 0 else (request.resource_types or list(_KNOWN))
    if any(kind not in _KNOWN for kind in types):
        return msg.RESPONSE(error_code=Errors.UNSUPPORTED_VERSION)
    listed = []
    for kind in types:
        listed += [msg.ConfigResource(resource_name=name, resource_type=kind) for name in _names(context, kind)]
    return msg.RESPONSE(config_resources=listed)


def _names(context, kind):
    if kind == CLIENT_METRICS:
        return sorted(context.client_metrics.texts)
    if kind == TOPIC:
        return sorted(context.logs.topics)
    if kind == BROKER:
        return [str(context.node_id)]
    if kind == GROUP:
        groups = context.groups
        return sorted(set(groups.groups) | set(groups.consumer.groups) | set(groups.share.groups)
                      | set(context.group_configs.texts))
    return []  # BROKER_LOGGER
