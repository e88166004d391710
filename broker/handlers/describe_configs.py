"""DescribeConfigs (32), v1-2, for TOPIC (2) and BROKER (4) resources.

Values are the effective ones; the source tells a topic override
(TOPIC_CONFIG), a broker setting given at start-up (STATIC_BROKER_CONFIG) or
a default (DEFAULT_CONFIG). Broker settings are static here: nothing is
dynamically reconfigurable in one process without AlterConfigs.
"""

from protocol.api_keys import ApiKey
from protocol.errors import Errors, KafkaError
from protocol.messages import describe_configs as msg

from ..config import SETTINGS
from ..dispatcher import handles

TOPIC, BROKER = 2, 4
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


def _text(value):
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@handles(ApiKey.DESCRIBE_CONFIGS, versions=(1, 2))
def handle(context, header, request):
    results = []
    for resource in request.resources:
        result = msg.Result(resource_type=resource.resource_type, resource_name=resource.resource_name)
        try:
            entries = _entries(context, resource)
        except KafkaError as exc:
            result.error_code, result.error_message = exc.code, exc.message
        else:
            keys = resource.configuration_keys
            result.configs = [msg.ConfigEntry(name=name, value=_text(value), read_only=resource.resource_type == BROKER,
                                              config_source=source)
                              for name, value, source in entries if keys is None or name in keys]
        results.append(result)
    return msg.RESPONSE(results=results)


def _entries(context, resource):
    if resource.resource_type == TOPIC:
        topic = context.logs.topics.get(resource.resource_name)
        if topic is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {resource.resource_name} does not exist")
        effective = context.logs.topic_config(topic.overrides)
        return [(name, value, TOPIC_CONFIG if name in topic.overrides else DEFAULT_CONFIG)
                for name, value in sorted(effective.items())]
    if resource.resource_type == BROKER:
        if resource.resource_name not in ("", str(context.node_id)):
            raise KafkaError(Errors.INVALID_REQUEST, f"Unexpected broker id {resource.resource_name}")
        config = context.config
        return [(name, config[name], STATIC_BROKER_CONFIG if config.is_set(name) else DEFAULT_CONFIG)
                for name in sorted(SETTINGS)]
    raise KafkaError(Errors.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type}")
