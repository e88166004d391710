"""DescribeClientQuotas (key 48), v0-1; flexible from v1."""

from ._dsl import BOOL, FLOAT64, INT8, INT16, INT32, STRING, Array, Field, Message, Struct

Component = Struct(
    "ComponentData",
    Field("entity_type", STRING),
    Field("match_type", INT8),
    Field("match", STRING, nullable="0+", default=None),
)

REQUEST = Message(
    "DescribeClientQuotasRequest", 48, "0-1", "1+",
    Field("components", Array(Component)),
    Field("strict", BOOL),
)

EntityData = Struct("EntityData", Field("entity_type", STRING), Field("entity_name", STRING, nullable="0+"))
ValueData = Struct("ValueData", Field("key", STRING), Field("value", FLOAT64))
EntryData = Struct("EntryData", Field("entity", Array(EntityData)), Field("values", Array(ValueData)))

RESPONSE = Message(
    "DescribeClientQuotasResponse", 48, "0-1", "1+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("entries", Array(EntryData), nullable="0+", default=None),
)
