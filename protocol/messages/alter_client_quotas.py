"""AlterClientQuotas (key 49), v0-1; flexible from v1."""

from ._dsl import BOOL, FLOAT64, INT16, INT32, STRING, Array, Field, Message, Struct

EntityData = Struct("EntityData", Field("entity_type", STRING), Field("entity_name", STRING, nullable="0+"))
OpData = Struct("OpData", Field("key", STRING), Field("value", FLOAT64), Field("remove", BOOL))
EntryData = Struct("EntryData", Field("entity", Array(EntityData)), Field("ops", Array(OpData)))

REQUEST = Message(
    "AlterClientQuotasRequest", 49, "0-1", "1+",
    Field("entries", Array(EntryData)),
    Field("validate_only", BOOL),
)

EntryResult = Struct(
    "EntryResult",
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("entity", Array(EntityData)),
)

RESPONSE = Message(
    "AlterClientQuotasResponse", 49, "0-1", "1+",
    Field("throttle_time_ms", INT32),
    Field("entries", Array(EntryResult)),
)
