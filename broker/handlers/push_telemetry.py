"""PushTelemetry (72), v0 (KIP-714).

Checked in Kafka's order (``broker/telemetry/instances.py``): a zero or reserved instance id,
a push after a terminating one INVALID_REQUEST; earlier than the push interval
THROTTLING_QUOTA_EXCEEDED; a stale subscription id UNKNOWN_SUBSCRIPTION_ID; an unknown compression
type UNSUPPORTED_COMPRESSION_TYPE; a payload over ``telemetry.max.bytes`` TELEMETRY_TOO_LARGE.
Then the OTLP metrics are decoded and kept for the metrics listener
(``broker/telemetry/receiver.py``): Kafka hands them to a receiver plugin, and with none drops
them; a payload that is not OTLP is INVALID_RECORD, as Kafka answers one its plugin refuses.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import KafkaError
from weir.protocol.messages import push_telemetry as msg

from ..dispatcher import handles
from ..telemetry.instances import instance_id_text
from ..telemetry.receiver import decode
from ..telemetry.selectors import client_of


@handles(ApiKey.PUSH_TELEMETRY, versions=(0, 0))
def handle(context, header, request, session=None):
    instances, now_ms = context.telemetry, context.clock.now_ms()
    payload = request.metrics
    try:
        instance = instances.check_push(request.client_instance_id, request.subscription_id, request.terminating,
                                        request.compression_type, len(payload), client_of(header, session), session,
                                        now_ms)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=exc.code)
    finally:
        instances.watch(session)
    if len(payload):
        try:
            data = decode(request.compression_type, payload, instances.max_bytes)
        except KafkaError as exc:
            instance.last_error = exc.code
            return msg.RESPONSE(error_code=exc.code)
        context.telemetry_receiver.receive(instance_id_text(instance.instance_id), data, instance.interval_ms, now_ms)
    return msg.RESPONSE()
