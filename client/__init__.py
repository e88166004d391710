"""Weir's asyncio Kafka client, built on the same sans-IO codec as the broker.

``Producer`` and ``Consumer`` speak the Kafka protocol to Weir and to Apache
Kafka alike; ``Connection`` is the raw request/response layer under them.
"""

from .admin import Admin
from .connection import Connection
from .consumer import CommitFailedError, Consumer, GroupMetadata, RebalanceListener
from .producer import PreparedTxnState, Producer, complete_prepared_transaction, fence_transactional_id
from .transact import GroupTransactSession
from .types import ConsumerRecord, OffsetAndMetadata, RecordMetadata, TopicPartition

__all__ = ["Admin", "CommitFailedError", "Connection", "Consumer", "ConsumerRecord", "GroupMetadata",
           "GroupTransactSession",
           "OffsetAndMetadata", "PreparedTxnState", "Producer", "RebalanceListener", "RecordMetadata",
           "TopicPartition", "complete_prepared_transaction", "fence_transactional_id"]
