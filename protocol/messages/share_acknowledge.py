"""ShareAcknowledge (key 79), v1-2, flexible (KIP-932): acknowledge acquired records without fetching.

v2 adds ``is_renew_ack`` (KIP-1222) and the acquisition lock timeout in the response.
"""

from ._dsl import BOOL, INT16, INT32, STRING, UUID, Array, Field, Message, Struct
from .share_fetch import AcknowledgementBatch, LeaderIdAndEpoch, NodeEndpoint

AcknowledgePartition = Struct(
    "AcknowledgePartition",
    Field("partition_index", INT32),
    Field("acknowledgement_batches", Array(AcknowledgementBatch)),
)

AcknowledgeTopic = Struct(
    "AcknowledgeTopic",
    Field("topic_id", UUID),
    Field("partitions", Array(AcknowledgePartition)),
)

REQUEST = Message(
    "ShareAcknowledgeRequest", 79, "1-2", "0+",
    Field("group_id", STRING, nullable="0+", default=None),
    Field("member_id", STRING, nullable="0+", default=None),
    Field("share_session_epoch", INT32),
    Field("is_renew_ack", BOOL, "2+", default=False),
    Field("topics", Array(AcknowledgeTopic)),
)

PartitionData = Struct(
    "PartitionData",
    Field("partition_index", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("current_leader", LeaderIdAndEpoch),
)

TopicResponse = Struct(
    "ShareAcknowledgeTopicResponse",
    Field("topic_id", UUID),
    Field("partitions", Array(PartitionData)),
)

RESPONSE = Message(
    "ShareAcknowledgeResponse", 79, "1-2", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("acquisition_lock_timeout_ms", INT32, "2+"),
    Field("responses", Array(TopicResponse)),
    Field("node_endpoints", Array(NodeEndpoint)),
)
