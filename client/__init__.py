"""Weir's asyncio Kafka client, built on the same sans-IO codec as the broker.

``Producer`` and ``Consumer`` speak the Kafka protocol to Weir and to Apache
Kafka alike; ``Connection`` is the raw request/response layer under them.
"""

from typing import TYPE_CHECKING

from .connection import Connection
from .consumer import CommitFailedError, Consumer, GroupMetadata, RebalanceListener
from .producer import PreparedTxnState, Producer, complete_prepared_transaction, fence_transactional_id
from .transact import GroupTransactSession
from .types import ConsumerRecord, OffsetAndMetadata, RecordMetadata, TopicPartition

if TYPE_CHECKING:
    from .admin import Admin

__all__ = ["Admin", "CommitFailedError", "Connection", "Consumer", "ConsumerRecord", "GroupMetadata",
           "GroupTransactSession",
           "OffsetAndMetadata", "PreparedTxnState", "Producer", "RebalanceListener", "RecordMetadata",
           "TopicPartition", "complete_prepared_transaction", "fence_transactional_id"]


def __getattr__(name: str) -> type:
    # The admin client (and its ~100 schemas) is imported on first use: a program that only produces
    # and consumes starts quicker (tests/client/test_import_cost.py).
    if name == "Admin":
        from .admin import Admin
        return Admin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
