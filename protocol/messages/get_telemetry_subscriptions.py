"""GetTelemetrySubscriptions (key 71), v0; flexible (KIP-714 client metrics)."""

from ._dsl import BOOL, INT8, INT16, INT32, STRING, UUID, Array, Field, Message

REQUEST = Message(
    "GetTelemetrySubscriptionsRequest", 71, "0", "0+",
    Field("client_instance_id", UUID),
)

RESPONSE = Message(
    "GetTelemetrySubscriptionsResponse", 71, "0", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("client_instance_id", UUID),
    Field("subscription_id", INT32),
    Field("accepted_compression_types", Array(INT8)),
    Field("push_interval_ms", INT32),
    Field("telemetry_max_bytes", INT32),
    Field("delta_temporality", BOOL),
    Field("requested_metrics", Array(STRING)),
)
