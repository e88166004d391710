"""IncrementalAlterConfigs (44), v0-1, for TOPIC, BROKER, GROUP and CLIENT_METRICS resources.

Each config names an operation on the current set: SET, DELETE (back to the
default), APPEND and SUBTRACT (list-typed settings only: cleanup.policy, and
Kafka's LIST-typed broker settings such as log.cleanup.policy or
sasl.enabled.mechanisms; elsewhere INVALID_CONFIG "Can't APPEND to key ... because its type is not
LIST", as Kafka's ConfigurationControlManager answers). An unknown operation
is INVALID_REQUEST. Checks, errors and ``validate_only`` are shared with
AlterConfigs (``_alter_configs``); changes are persisted and take effect on the
live partitions at once.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import incremental_alter_configs as msg

from ..config import SETTINGS
from ..config_sources import text
from ..dispatcher import handles
from ..inert_settings import LIST, TYPES
from ._alter_configs import BROKER, TOPIC, alter, refuse_nulls

_OPS = {msg.SET: "SET", msg.DELETE: "DELETE", msg.APPEND: "APPEND", msg.SUBTRACT: "SUBTRACT"}
# The list-typed topic settings Weir knows, with the topic-level default Kafka appends to or subtracts
# from when the topic has no override (LogConfig's, not the broker's log.cleanup.policy: as Kafka does).
_TOPIC_LIST_DEFAULTS = {"cleanup.policy": "delete"}
# The list-typed broker settings (Kafka's LIST type), with their built-in defaults likewise.
_BROKER_LIST_DEFAULTS = {name: text(setting.default) or "" for name, setting in SETTINGS.items()
                         if isinstance(setting.default, tuple) or TYPES.get(name) == LIST
                         or name == "log.cleanup.policy"}


def _applied(current, resource, resource_type):
    refuse_nulls([c.name for c in resource.configs if c.config_operation != msg.DELETE and c.value is None])
    texts = dict(current)
    for config in resource.configs:
        op = config.config_operation
        if op not in _OPS:
            raise KafkaError(Errors.INVALID_REQUEST, f"Unknown operations type {op}")
        if op == msg.SET:
            texts[config.name] = config.value
        elif op == msg.DELETE:
            texts.pop(config.name, None)
        else:
            defaults = {TOPIC: _TOPIC_LIST_DEFAULTS, BROKER: _BROKER_LIST_DEFAULTS}.get(resource_type, {})
            if config.name not in defaults:
                raise KafkaError(Errors.INVALID_CONFIG,
                                 f"Can't {_OPS[op]} to key {config.name} because its type is not LIST.")
            old = texts.get(config.name, defaults[config.name])
            parts = [part for part in old.split(",") if part]
            for value in config.value.split(","):
                if op == msg.APPEND and value not in parts:
                    parts.append(value)
                elif op == msg.SUBTRACT and value in parts:
                    parts.remove(value)
            texts[config.name] = ",".join(parts)
    return texts


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, versions=(0, 1))
def handle(context, header, request, session=None):
    return msg.RESPONSE(responses=alter(context, request, _applied, msg.ResourceResponse, session))
