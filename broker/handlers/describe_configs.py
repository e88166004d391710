"""DescribeConfigs (32), v1-4, for TOPIC (2), BROKER (4), GROUP (32) and CLIENT_METRICS (16) resources.

Values are the effective ones, with Kafka's sources and synonyms (see
``broker.config_sources``): a topic override is DYNAMIC_TOPIC_CONFIG, a value
set by AlterConfigs DYNAMIC_BROKER_CONFIG (this node) or
DYNAMIC_DEFAULT_BROKER_CONFIG (resource ""), one from the start-up file
STATIC_BROKER_CONFIG, otherwise DEFAULT_CONFIG. Synonyms are sent only when
asked (v1+), documentation only when asked (v3+); config types are always
sent (v3+). BROKER "" lists only the cluster-wide dynamic defaults, as Kafka
does; a broker setting is read-only unless Kafka lets it change at run time.
A freshly formatted Kafka 4 cluster shows min.insync.replicas as
DYNAMIC_DEFAULT_BROKER_CONFIG (its storage format writes it cluster-wide for
eligible leader replicas, KIP-966); Weir has no format step and shows it as
DEFAULT_CONFIG, same value (named in tests/java/test_admin.py). A GROUP lists
Kafka's group configs (``broker.group.configs``), an override as GROUP_CONFIG,
whether or not the group exists. A CLIENT_METRICS subscription lists its three configs
(``broker.telemetry.subscriptions``), whether or not it exists. Kafka's topic and broker settings that Weir
accepts without acting on them are listed too, their documentation starting
"No effect in Weir" (``broker.inert_settings``). BROKER_LOGGER resources are
INVALID_REQUEST: Weir has none.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import describe_configs as msg

from .. import config_sources
from ..acl.checks import check_config_access
from ..acl.model import DESCRIBE_CONFIGS
from ..dispatcher import handles
from ..group.configs import GROUP
from ..log.manager import validate_topic_name
from ..telemetry.subscriptions import CLIENT_METRICS

TOPIC, BROKER = 2, 4


@handles(ApiKey.DESCRIBE_CONFIGS, versions=(1, 4))
def handle(context, header, request, session=None):
    results = []
    for resource in request.resources:
        result = msg.Result(resource_type=resource.resource_type, resource_name=resource.resource_name)
        try:
            check_config_access(context.authorizer, session, resource.resource_type, resource.resource_name,
                                DESCRIBE_CONFIGS)  # ACLs
            entries = _entries(context, resource)
        except KafkaError as exc:
            result.error_code, result.error_message = exc.code, exc.message
        else:
            keys = resource.configuration_keys
            result.configs = [_entry(entry, request) for entry in entries if not keys or entry.name in keys]
        results.append(result)
    return msg.RESPONSE(results=results)


def _entry(entry, request):
    return msg.ConfigEntry(
        name=entry.name, value=entry.value, read_only=entry.read_only, config_source=entry.source,
        is_sensitive=entry.sensitive,
        synonyms=[msg.Synonym(name=n, value=v, source=s) for n, v, s in entry.synonyms]
        if request.include_synonyms else [],
        config_type=entry.config_type, documentation=entry.documentation if request.include_documentation else None)


def _entries(context, resource):
    if resource.resource_type == TOPIC:
        validate_topic_name(resource.resource_name)
        topic = context.logs.topics.get(resource.resource_name)
        if topic is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {resource.resource_name} does not exist")
        return config_sources.topic_entries(context.config, context.logs.topic_config(topic.overrides),
                                            topic.overrides)
    if resource.resource_type == BROKER:
        name = resource.resource_name
        if name == "":
            return config_sources.broker_entries(context.config, per_node=False)
        try:
            node = int(name)
        except ValueError:
            raise KafkaError(Errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
        if node != context.node_id:
            raise KafkaError(Errors.INVALID_REQUEST, f"Unexpected broker id, expected {context.node_id} or empty "
                                                     f"string, but received {name}")
        return config_sources.broker_entries(context.config, per_node=True)
    if resource.resource_type == GROUP:
        return context.group_configs.entries(resource.resource_name)
    if resource.resource_type == CLIENT_METRICS:
        return context.client_metrics.entries(resource.resource_name)
    raise KafkaError(Errors.INVALID_REQUEST, f"Unsupported resource type: {resource.resource_type}")
