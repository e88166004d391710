"""Record formats of the coordinators' internal topics, as Apache Kafka writes them.

``__transaction_state``: key = int16 version 0 + TransactionLogKey
(transactional id); value = int16 version 0 + TransactionLogValue (PROTOCOL.md
4.8). ``__consumer_offsets``: key version 1 = OffsetCommitKey, value version 3
= OffsetCommitValue (4.9). A null value is a tombstone.

Weir writes TransactionLogValue v0 (non-flexible): its v1 tagged fields
(previous/next producer id, client transaction version) matter only to
transaction version 2, which Weir does not offer.

The formats are construct declarations, compiled once (about 10 µs per record
to build; a coordinator writes a few records per transaction).
"""

from __future__ import annotations

import construct as c

_STRING = c.PascalString(c.Int16ub, "utf8")

TXN_KEY_VERSION = 0
TXN_VALUE_VERSION = 0
OFFSET_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3

TransactionLogKey = c.Struct(
    "version" / c.Int16sb,
    "transactional_id" / _STRING,
).compile()

TransactionLogValue = c.Struct(
    "version" / c.Int16sb,
    "producer_id" / c.Int64sb,
    "producer_epoch" / c.Int16sb,
    "transaction_timeout_ms" / c.Int32sb,
    "transaction_status" / c.Int8sb,
    # a nullable array: the count is -1 (null) when the state is Empty, as Kafka writes it
    "partition_count" / c.Int32sb,
    "transaction_partitions" / c.If(c.this.partition_count >= 0, c.Array(c.this.partition_count, c.Struct(
        "topic" / _STRING,
        "partition_ids" / c.PrefixedArray(c.Int32sb, c.Int32sb),
    ))),
    "transaction_last_update_timestamp_ms" / c.Int64sb,
    "transaction_start_timestamp_ms" / c.Int64sb,
).compile()

# The key's version says which record it is; offsets use versions 0 and 1.
RecordKeyVersion = c.Int16sb.compile()

OffsetCommitKey = c.Struct(
    "version" / c.Int16sb,
    "group" / _STRING,
    "topic" / _STRING,
    "partition" / c.Int32sb,
).compile()

OffsetCommitValue = c.Struct(
    "version" / c.Int16sb,
    "offset" / c.Int64sb,
    "leader_epoch" / c.If(c.this.version >= 3, c.Int32sb),
    "metadata" / _STRING,
    "commit_timestamp" / c.Int64sb,
    "expire_timestamp" / c.If(c.this.version == 1, c.Int64sb),
).compile()

# Key version 2: a classic group's metadata; the value is GroupMetadataValue.
# Weir writes value v3 and reads v0-3 (v4, flexible, is what Kafka 4 may write
# after an upgrade; a Weir data directory never holds it).
GROUP_METADATA_VALUE_VERSION = 3

GroupMetadataKey = c.Struct(
    "version" / c.Int16sb,
    "group" / _STRING,
).compile()


class _NullableString(c.Adapter):
    """int16 length (-1 = null) then UTF-8 bytes."""

    def _decode(self, obj, context, path):
        return None if obj.length < 0 else obj.data.decode("utf8")

    def _encode(self, obj, context, path):
        if obj is None:
            return {"length": -1, "data": b""}
        data = obj.encode("utf8")
        return {"length": len(data), "data": data}


_NULLABLE_STRING = _NullableString(c.Struct(
    "length" / c.Int16sb,
    "data" / c.If(c.this.length >= 0, c.Bytes(c.this.length)),
))

GroupMetadataValue = c.Struct(
    "version" / c.Int16sb,
    "protocol_type" / _STRING,
    "generation" / c.Int32sb,
    "protocol" / _NULLABLE_STRING,
    "leader" / _NULLABLE_STRING,
    "current_state_timestamp" / c.If(c.this.version >= 2, c.Int64sb),
    "members" / c.PrefixedArray(c.Int32sb, c.Struct(
        "member_id" / _STRING,
        "group_instance_id" / c.If(c.this._.version >= 3, _NULLABLE_STRING),
        "client_id" / _STRING,
        "client_host" / _STRING,
        "rebalance_timeout" / c.If(c.this._.version >= 1, c.Int32sb),
        "session_timeout" / c.Int32sb,
        "subscription" / c.Prefixed(c.Int32sb, c.GreedyBytes),
        "assignment" / c.Prefixed(c.Int32sb, c.GreedyBytes),
    )),
).compile()
