"""WriteTxnMarkers (key 27), v1; always flexible. v2 (transaction version) is not declared."""

from ._dsl import BOOL, INT16, INT32, INT64, STRING, Array, Field, Message, Struct

MarkerTopic = Struct(
    "WritableTxnMarkerTopic",
    Field("name", STRING),
    Field("partition_indexes", Array(INT32)),
)

Marker = Struct(
    "WritableTxnMarker",
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("transaction_result", BOOL),
    Field("topics", Array(MarkerTopic)),
    Field("coordinator_epoch", INT32),
)

REQUEST = Message(
    "WriteTxnMarkersRequest", 27, "1-1", "1+",
    Field("markers", Array(Marker)),
)

PartitionResult = Struct(
    "WritableTxnMarkerPartitionResult",
    Field("partition_index", INT32),
    Field("error_code", INT16),
)

TopicResult = Struct(
    "WritableTxnMarkerTopicResult",
    Field("name", STRING),
    Field("partitions", Array(PartitionResult)),
)

MarkerResult = Struct(
    "WritableTxnMarkerResult",
    Field("producer_id", INT64),
    Field("topics", Array(TopicResult)),
)

RESPONSE = Message(
    "WriteTxnMarkersResponse", 27, "1-1", "1+",
    Field("markers", Array(MarkerResult)),
)
