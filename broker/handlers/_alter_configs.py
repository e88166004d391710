"""What AlterConfigs (33) and IncrementalAlterConfigs (44) share: checking and applying
one resource's new config set, with Kafka's errors.

Each resource succeeds or fails as a whole. A resource named twice is
INVALID_REQUEST, as is a config named twice or a null value. BROKER changes go
through ``broker.dynamic_config`` (INVALID_REQUEST for a setting that cannot
change at run time or a bad value, as Kafka's broker answers); TOPIC changes
are checked as CreateTopics checks configs (INVALID_CONFIG), then the topic
must exist (UNKNOWN_TOPIC_OR_PARTITION), in Kafka's order. GROUP changes are
checked by ``group.configs`` (INVALID_CONFIG, Kafka's messages); the group need
not exist. CLIENT_METRICS changes are checked by ``telemetry.subscriptions`` (Kafka's
errors); removing every config removes the subscription. BROKER_LOGGER resources are
INVALID_REQUEST: Weir has none. ``validate_only`` checks everything and changes nothing.
"""

from collections import Counter

from weir.protocol.errors import Errors, KafkaError

from ..acl.checks import check_config_access
from ..acl.model import ALTER_CONFIGS
from ..config import ConfigError, parse_topic_config
from ..config_sources import text
from ..group.configs import GROUP
from ..log.manager import validate_topic_name
from ..telemetry.subscriptions import CLIENT_METRICS

TOPIC, BROKER = 2, 4


def alter(context, request, updated, response_struct, session=None):
    """Answer every resource; ``updated(current_texts, resource, resource_type)`` gives its new texts."""
    counts = Counter((r.resource_type, r.resource_name) for r in request.resources)
    answers = []
    for resource in request.resources:
        answer = response_struct(resource_type=resource.resource_type, resource_name=resource.resource_name)
        try:
            if counts[(resource.resource_type, resource.resource_name)] > 1:
                raise KafkaError(Errors.INVALID_REQUEST, "Each resource must appear at most once.")
            if len({c.name for c in resource.configs}) != len(resource.configs):
                raise KafkaError(Errors.INVALID_REQUEST, "Error due to duplicate config keys")
            check_config_access(context.authorizer, session, resource.resource_type, resource.resource_name,
                                ALTER_CONFIGS)  # ACLs
            _alter_one(context, resource, updated, request.validate_only)
        except KafkaError as exc:
            answer.error_code, answer.error_message = exc.code, exc.message
        answers.append(answer)
    return answers


def _alter_one(context, resource, updated, validate_only):
    if resource.resource_type == BROKER:
        dynamic = context.dynamic_configs
        layer = dynamic.layer_name(resource.resource_name)
        texts = updated(dynamic.current(layer), resource, BROKER)
        dynamic.validate(texts, layer)
        if not validate_only:
            dynamic.replace(layer, texts)
            context.logs.refresh_topic_configs()  # topic defaults follow broker settings
    elif resource.resource_type == TOPIC:
        name = resource.resource_name
        if not name:
            raise KafkaError(Errors.INVALID_REQUEST, "Default topic resources are not allowed.")
        validate_topic_name(name)
        topic = context.logs.topics.get(name)
        current = {key: text(value) for key, value in topic.overrides.items()} if topic else {}
        overrides = {}
        for key, value in updated(current, resource, TOPIC).items():
            try:
                overrides[key] = parse_topic_config(key, value)
            except ConfigError as exc:
                raise KafkaError(Errors.INVALID_CONFIG, str(exc)) from None
        if topic is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        if not validate_only:
            context.logs.set_topic_overrides(name, overrides)
    elif resource.resource_type == GROUP:
        group_configs = context.group_configs
        texts = updated(group_configs.current(resource.resource_name), resource, GROUP)
        group_configs.validate(texts)
        if not validate_only:
            group_configs.replace(resource.resource_name, texts)
    elif resource.resource_type == CLIENT_METRICS:
        subscriptions = context.client_metrics
        texts = updated(subscriptions.current(resource.resource_name), resource, CLIENT_METRICS)
        subscriptions.validate(resource.resource_name, texts)
        if not validate_only:
            subscriptions.replace(resource.resource_name, texts)
    else:
        raise KafkaError(Errors.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}")


def refuse_nulls(names):
    if names:
        raise KafkaError(Errors.INVALID_REQUEST, "Null value not supported for : " + ", ".join(names))
