"""Raw KIP-714 requests, the same to Weir and to Kafka (tests/telemetry)."""

from __future__ import annotations

import uuid

from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import describe_configs as describe
from weir.protocol.messages import get_telemetry_subscriptions as get
from weir.protocol.messages import incremental_alter_configs as alter
from weir.protocol.messages import list_config_resources as listing
from weir.protocol.messages import push_telemetry as push

CLIENT_METRICS = 16
ZERO = bytes(16)


def unique(prefix: str) -> str:
    """A name of its own: the session's brokers keep every subscription a test made."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def connect(broker, client_id: str) -> Connection:
    return await Connection.open("127.0.0.1", broker.port, client_id=client_id)


async def set_configs(connection, name: str, *pairs: tuple[str, str | None], op: int = alter.SET):
    """One IncrementalAlterConfigs on a CLIENT_METRICS resource: (error code, message)."""
    answer = await connection.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, alter.REQUEST(resources=[alter.Resource(
        resource_type=CLIENT_METRICS, resource_name=name,
        configs=[alter.AlterableConfig(name=key, config_operation=op, value=value) for key, value in pairs])],
        validate_only=False))
    return answer.responses[0].error_code, answer.responses[0].error_message


async def describe_configs(connection, name: str):
    answer = await connection.request(ApiKey.DESCRIBE_CONFIGS, 4, describe.REQUEST(resources=[describe.Resource(
        resource_type=CLIENT_METRICS, resource_name=name, configuration_keys=None)], include_synonyms=True,
        include_documentation=True))
    result = answer.results[0]
    return result.error_code, result.error_message, [
        (e.name, e.value, e.read_only, e.config_source, e.is_sensitive,
         [(s.name, s.value, s.source) for s in e.synonyms], e.config_type, e.documentation) for e in result.configs]


async def list_resources(connection, version: int, types: list[int]):
    answer = await connection.request(ApiKey.LIST_CONFIG_RESOURCES, version, listing.REQUEST(resource_types=types))
    return answer.error_code, {(r.resource_name, r.resource_type) for r in answer.config_resources}


async def get_subscription(connection, instance_id: bytes = ZERO):
    return await connection.request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0,
                                    get.REQUEST(client_instance_id=instance_id))


async def push_metrics(connection, instance_id: bytes, subscription_id: int, payload: bytes = b"", *,
                       compression: int = 0, terminating: bool = False) -> int:
    answer = await connection.request(ApiKey.PUSH_TELEMETRY, 0, push.REQUEST(
        client_instance_id=instance_id, subscription_id=subscription_id, terminating=terminating,
        compression_type=compression, metrics=payload))
    return answer.error_code


def otlp_payload(name: str = "org.apache.kafka.producer.record.send.total", value: float = 3.0,
                 delta: bool = True, **attributes: str) -> bytes:
    """A MetricsData with one monotonic sum point, as the Java client encodes one."""
    data = metrics_pb2.MetricsData()
    metric = data.resource_metrics.add().scope_metrics.add().metrics.add()
    metric.name = name
    metric.sum.is_monotonic = True
    metric.sum.aggregation_temporality = (metrics_pb2.AGGREGATION_TEMPORALITY_DELTA if delta
                                          else metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE)
    point = metric.sum.data_points.add()
    point.as_double = value
    for key, text in attributes.items():
        point.attributes.append(common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(string_value=text)))
    return data.SerializeToString()
