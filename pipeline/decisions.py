"""The exactly-once sink's decision log: one compacted Kafka topic, one key per query.

The latest record under a query's key is the state of its newest batch:
``{"batch": 7, "state": "commit", "txns": [[id, producer id, epoch], ...]}`` once
the driver has decided to commit batch 7 (written before any EndTxn), then
``{"batch": 7, "state": "done"}`` once every transaction is committed. Only the
latest record matters, so compaction may drop the rest. Records are written
with a plain idempotent produce (acks=all) and read back under read_committed.
"""

from __future__ import annotations

import json

from weir.client import Consumer, Producer, TopicPartition
from weir.client.calls import CONTROLLER
from weir.client.cluster import Cluster
from weir.client.errors import raise_for
from weir.client.partitioner import partition_for_key
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import create_topics

from .security import KafkaSecurity

DEFAULT_TOPIC = "__weir_sink_decisions"
COMMIT, DONE = "commit", "done"
# CreateTopics declares its config entries inline: reach the struct through the field.
_TOPIC_CONFIG = next(f for f in create_topics.CreatableTopic.fields if f.name == "configs").type.element


async def ensure_topic(cluster: Cluster, topic: str, partitions: int = 1,
                       configs: dict[str, str] | None = None) -> None:
    """Create ``topic`` unless it exists (replication: the broker's default); by default compacted,
    as the decision topic is."""
    configs = {"cleanup.policy": "compact"} if configs is None else configs
    await cluster.refresh([topic], allow_auto_create=False)
    info = cluster.topics.get(topic)
    if info is not None and not info.error and info.partitions:
        return
    # Through the client's call path to the controller: NOT_CONTROLLER, a lost connection and the like
    # are retried until request.timeout.ms.
    response = await cluster.call(CONTROLLER, ApiKey.CREATE_TOPICS, lambda _v: create_topics.REQUEST(topics=[
        create_topics.CreatableTopic(name=topic, num_partitions=partitions, replication_factor=-1, assignments=[],
                                     configs=[_TOPIC_CONFIG(name=k, value=v) for k, v in configs.items()])]),
        highest=4, error_of=lambda r: r.topics[0].error_code)
    code = response.topics[0].error_code
    if code != Errors.TOPIC_ALREADY_EXISTS:
        raise_for(code, f"CreateTopics {topic}: {response.topics[0].error_message}", request=ApiKey.CREATE_TOPICS)
    await cluster.partitions_for(topic)


class DecisionLog:
    def __init__(self, bootstrap: str, topic: str, query_key: str, security: KafkaSecurity | None = None):
        self.bootstrap = bootstrap
        # the sink's kafka.security.protocol, kafka.sasl.*, kafka.ssl.* (picklable)
        self.security = security or KafkaSecurity()
        self.topic = topic
        self.key = query_key.encode()

    async def latest(self) -> dict | None:
        """The newest record under this query's key, or None if it never decided a batch."""
        async with Consumer(bootstrap_servers=self.bootstrap, isolation_level="read_committed",
                            **self.security.keywords()) as consumer:
            await ensure_topic(consumer.cluster, self.topic)
            tp = TopicPartition(self.topic, partition_for_key(self.key, await consumer.cluster.partitions_for(
                self.topic)))
            consumer.assign([tp])
            end = (await consumer.end_offsets([tp]))[tp]
            await consumer.seek_to_beginning(tp)
            found = None
            while await consumer.position(tp) < end:
                for record in (await consumer.getmany(tp, timeout_ms=1000)).get(tp, ()):
                    if record.key == self.key and record.offset < end:
                        found = None if record.value is None else json.loads(record.value)
            return found

    async def write(self, decision: dict) -> None:
        """Append one record and return once the broker has acknowledged it (acks=all, idempotent)."""
        async with Producer(self.bootstrap, acks="all", enable_idempotence=True, linger_ms=0,
                            **self.security.keywords()) as producer:
            await ensure_topic(producer.cluster, self.topic)
            await producer.send_and_wait(self.topic, json.dumps(decision).encode(), key=self.key)
