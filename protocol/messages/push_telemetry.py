"""PushTelemetry (key 72), v0; flexible (KIP-714 client metrics)."""

from ._dsl import BOOL, BYTES, INT8, INT16, INT32, UUID, Field, Message

REQUEST = Message(
    "PushTelemetryRequest", 72, "0", "0+",
    Field("client_instance_id", UUID),
    Field("subscription_id", INT32),
    Field("terminating", BOOL),
    Field("compression_type", INT8),
    Field("metrics", BYTES),
)

RESPONSE = Message(
    "PushTelemetryResponse", 72, "0", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
)
