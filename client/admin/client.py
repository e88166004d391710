"""``Admin``: the asyncio admin client (topics, configs, groups, offsets, records, transactions)."""

from __future__ import annotations

from .acls import AclAdmin
from .consumer_groups import ConsumerGroupAdmin
from .share_groups import ShareGroupAdmin
from .topics import TopicAdmin
from .transactions import TransactionAdmin
from .tokens import TokenAdmin
from .users import UserAdmin


class Admin(TopicAdmin, ConsumerGroupAdmin, ShareGroupAdmin, TransactionAdmin, AclAdmin, UserAdmin, TokenAdmin):
    """Administer a Kafka cluster (Weir or Apache Kafka) over the wire protocol.

    An async context manager::

        async with Admin("127.0.0.1:9092") as admin:
            await admin.create_topics([NewTopic("orders", 3)])
            for hanging in await admin.find_hanging_transactions(topic="orders"):
                await admin.abort_transaction(AbortTransactionSpec(
                    hanging.topic_partition, hanging.producer.producer_id,
                    hanging.producer.producer_epoch, max(hanging.producer.coordinator_epoch, 0)))

    Broker answers that are errors are raised as the classes of ``client.errors``
    (``TopicAlreadyExistsError``, ``InvalidConfigError``, ``GroupIdNotFoundError``, ...).
    Keyword arguments: ``client_id``, ``request_timeout_ms`` (one request),
    ``default_api_timeout_ms`` (one call, retries included), ``retry_backoff_ms``.
    """

    async def __aenter__(self) -> Admin:
        await self.start()
        return self
