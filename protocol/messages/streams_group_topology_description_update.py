"""StreamsGroupTopologyDescriptionUpdate (key 93), v0, flexible (Kafka 4.4): a member sends its
topology's processor-level description when a heartbeat answer says topology_description_required."""

from ._dsl import INT16, INT32, STRING, Field, Message
from ._streams_shapes import TopologyDescription

REQUEST = Message(
    "StreamsGroupTopologyDescriptionUpdateRequest", 93, "0-0", "0+",
    Field("group_id", STRING),
    Field("member_id", STRING),
    Field("topology_epoch", INT32),
    Field("topology_description", TopologyDescription),
)

RESPONSE = Message(
    "StreamsGroupTopologyDescriptionUpdateResponse", 93, "0-0", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)
