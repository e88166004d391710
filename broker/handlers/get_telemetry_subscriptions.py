"""GetTelemetrySubscriptions (71), v0 (KIP-714).

The client's subscription (``broker/telemetry/instances.py``): a new client instance id when it
sends the zero one, the metrics and push interval of the subscriptions matching it, Kafka's
accepted compression types (zstd, lz4, gzip, snappy), ``telemetry.max.bytes`` and delta
temporality. A Get before the push interval has passed is THROTTLING_QUOTA_EXCEEDED. Kafka 4.4
leaves this API out of ApiVersions unless a ClientTelemetryReceiver plugin is configured; Weir
receives the metrics itself and advertises it (``broker/telemetry/receiver.py``).
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import KafkaError
from weir.protocol.messages import get_telemetry_subscriptions as msg

from ..dispatcher import handles
from ..telemetry.instances import ACCEPTED_COMPRESSION
from ..telemetry.selectors import client_of


@handles(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, versions=(0, 0))
def handle(context, header, request, session=None):
    instances = context.telemetry
    try:
        instance = instances.get_subscription(request.client_instance_id, client_of(header, session),
                                              session, context.clock.now_ms())
    except KafkaError as exc:
        return msg.RESPONSE(error_code=exc.code)
    instances.watch(session)
    return msg.RESPONSE(client_instance_id=instance.instance_id, subscription_id=instance.subscription_id,
                        accepted_compression_types=[int(c) for c in ACCEPTED_COMPRESSION],
                        push_interval_ms=instance.interval_ms, telemetry_max_bytes=instances.max_bytes,
                        delta_temporality=True, requested_metrics=list(instance.metrics))
