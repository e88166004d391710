"""OffsetFetch (key 9), v1-9; v6 flexible. v2: null topics = all, top-level error;
v5 leader epochs; v7 require_stable (KIP-447); v8 batched groups; v9 member id and epoch
(KIP-848). v10 (topic ids) is not declared."""

from ._dsl import BOOL, INT16, INT32, INT64, STRING, Array, Field, Message, Struct

RequestTopic = Struct(
    "OffsetFetchRequestTopic",
    Field("name", STRING, "0-7"),
    Field("partition_indexes", Array(INT32), "0-7"),
)

RequestGroupTopic = Struct(
    "OffsetFetchRequestTopics",
    Field("name", STRING, "8+"),
    Field("partition_indexes", Array(INT32), "8+"),
)

RequestGroup = Struct(
    "OffsetFetchRequestGroup",
    Field("group_id", STRING, "8+"),
    Field("member_id", STRING, "9+", nullable="9+", default=None),
    Field("member_epoch", INT32, "9+", default=-1),
    Field("topics", Array(RequestGroupTopic), "8+", nullable="8+"),
)

REQUEST = Message(
    "OffsetFetchRequest", 9, "1-9", "6+",
    Field("group_id", STRING, "0-7"),
    Field("topics", Array(RequestTopic), "0-7", nullable="2-7"),
    Field("groups", Array(RequestGroup), "8+"),
    Field("require_stable", BOOL, "7+", default=False),
)

ResponsePartition = Struct(
    "OffsetFetchResponsePartition",
    Field("partition_index", INT32, "0-7"),
    Field("committed_offset", INT64, "0-7"),
    Field("committed_leader_epoch", INT32, "5-7", default=-1),
    Field("metadata", STRING, "0-7", nullable="0-7"),
    Field("error_code", INT16, "0-7"),
)

ResponseTopic = Struct(
    "OffsetFetchResponseTopic",
    Field("name", STRING, "0-7"),
    Field("partitions", Array(ResponsePartition), "0-7"),
)

GroupPartition = Struct(
    "OffsetFetchResponsePartitions",
    Field("partition_index", INT32, "8+"),
    Field("committed_offset", INT64, "8+"),
    Field("committed_leader_epoch", INT32, "8+", default=-1),
    Field("metadata", STRING, "8+", nullable="8+"),
    Field("error_code", INT16, "8+"),
)

GroupTopic = Struct(
    "OffsetFetchResponseTopics",
    Field("name", STRING, "8+"),
    Field("partitions", Array(GroupPartition), "8+"),
)

Group = Struct(
    "OffsetFetchResponseGroup",
    Field("group_id", STRING, "8+"),
    Field("topics", Array(GroupTopic), "8+"),
    Field("error_code", INT16, "8+", default=0),
)

RESPONSE = Message(
    "OffsetFetchResponse", 9, "1-9", "6+",
    Field("throttle_time_ms", INT32, "3+"),
    Field("topics", Array(ResponseTopic), "0-7"),
    Field("error_code", INT16, "2-7", default=0),
    Field("groups", Array(Group), "8+"),
)
