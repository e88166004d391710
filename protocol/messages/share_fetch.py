"""ShareFetch (key 78), v1-2, flexible (KIP-932): fetch records for a share group, acquiring them.

Acknowledgements of records acquired earlier ride along per partition. v2 adds the acquire mode
(0 batch-optimized, 1 record-limit) and ``is_renew_ack`` (KIP-1222: acknowledgements only, RENEW
among them, no new records).
"""

from ._dsl import BOOL, INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Array, Field, Message, Struct

AcknowledgementBatch = Struct(
    "AcknowledgementBatch",
    Field("first_offset", INT64),
    Field("last_offset", INT64),
    Field("acknowledge_types", Array(INT8)),
)

FetchPartition = Struct(
    "FetchPartition",
    Field("partition_index", INT32),
    Field("acknowledgement_batches", Array(AcknowledgementBatch)),
)

FetchTopic = Struct(
    "FetchTopic",
    Field("topic_id", UUID),
    Field("partitions", Array(FetchPartition)),
)

ForgottenTopic = Struct(
    "ForgottenTopic",
    Field("topic_id", UUID),
    Field("partitions", Array(INT32)),
)

REQUEST = Message(
    "ShareFetchRequest", 78, "1-2", "0+",
    Field("group_id", STRING, nullable="0+", default=None),
    Field("member_id", STRING, nullable="0+", default=None),
    Field("share_session_epoch", INT32),
    Field("max_wait_ms", INT32),
    Field("min_bytes", INT32),
    Field("max_bytes", INT32, default=0x7FFFFFFF),
    Field("max_records", INT32),
    Field("batch_size", INT32),
    Field("share_acquire_mode", INT8, "2+", default=0),
    Field("is_renew_ack", BOOL, "2+", default=False),
    Field("topics", Array(FetchTopic)),
    Field("forgotten_topics_data", Array(ForgottenTopic)),
)

LeaderIdAndEpoch = Struct(
    "LeaderIdAndEpoch",
    Field("leader_id", INT32, default=-1),
    Field("leader_epoch", INT32, default=-1),
)

AcquiredRecords = Struct(
    "AcquiredRecords",
    Field("first_offset", INT64),
    Field("last_offset", INT64),
    Field("delivery_count", INT16),
)

PartitionData = Struct(
    "PartitionData",
    Field("partition_index", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("acknowledge_error_code", INT16),
    Field("acknowledge_error_message", STRING, nullable="0+", default=None),
    Field("current_leader", LeaderIdAndEpoch),
    Field("records", RECORDS, default=b""),
    Field("acquired_records", Array(AcquiredRecords)),
)

TopicResponse = Struct(
    "ShareFetchableTopicResponse",
    Field("topic_id", UUID),
    Field("partitions", Array(PartitionData)),
)

NodeEndpoint = Struct(
    "NodeEndpoint",
    Field("node_id", INT32),
    Field("host", STRING),
    Field("port", INT32),
    Field("rack", STRING, nullable="0+", default=None),
)

RESPONSE = Message(
    "ShareFetchResponse", 78, "1-2", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("acquisition_lock_timeout_ms", INT32),
    Field("responses", Array(TopicResponse)),
    Field("node_endpoints", Array(NodeEndpoint)),
)
