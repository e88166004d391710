"""DescribeLogDirs (key 35), v1-5; flexible from v2."""

from ._dsl import BOOL, INT16, INT32, INT64, STRING, Array, Field, Message, Struct

DescribableLogDirTopic = Struct(
    "DescribableLogDirTopic",
    Field("topic", STRING),
    Field("partitions", Array(INT32)),
)

REQUEST = Message(
    "DescribeLogDirsRequest", 35, "1-5", "2+",
    Field("topics", Array(DescribableLogDirTopic), nullable="0+", default=None),
)

Partition = Struct(
    "DescribeLogDirsPartition",
    Field("partition_index", INT32),
    Field("partition_size", INT64),
    Field("offset_lag", INT64),
    Field("is_future_key", BOOL),
)

Topic = Struct("DescribeLogDirsTopic", Field("name", STRING), Field("partitions", Array(Partition)))

Result = Struct(
    "DescribeLogDirsResult",
    Field("error_code", INT16),
    Field("log_dir", STRING),
    Field("topics", Array(Topic)),
    Field("total_bytes", INT64, "4+", default=-1),
    Field("usable_bytes", INT64, "4+", default=-1),
    Field("is_cordoned", BOOL, "5+", default=False),
)

RESPONSE = Message(
    "DescribeLogDirsResponse", 35, "1-5", "2+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16, "3+"),
    Field("results", Array(Result)),
)
