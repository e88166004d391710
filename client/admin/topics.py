"""Admin calls on topics, partitions, configs and the cluster.

Topic creation, deletion and new partitions go to the controller (Weir: its
only broker). Kafka's validation answers (TOPIC_ALREADY_EXISTS, INVALID_CONFIG,
INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, ...) are raised as the error
classes of ``client.errors``, with the broker's error message. A call that
names several resources raises for the first one that failed, after the
broker has acted on all of them (as the Java Admin's ``all()`` future does).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import (alter_configs, create_partitions, create_topics, delete_records, delete_topics,
                               describe_cluster, describe_configs, incremental_alter_configs, list_offsets)
from weir.protocol.messages._dsl import INT32_MIN

from ..calls import ANY_BROKER, CONTROLLER, Broker
from ..errors import BrokerResponseError, error_instance
from ..types import TopicPartition
from .base import AdminBase, by_topic, check, retry_code
from .results import (AlterConfigOp, BrokerInfo, ClusterDescription, ConfigEntry, ConfigResource, ConfigSource,
                      NewTopic, PartitionInfo, ResourceType, TopicDescription)

# ListOffsets' special timestamps
EARLIEST = -2
"""``list_offsets``: the log start offset."""
LATEST = -1
"""``list_offsets``: the high watermark (the last stable offset with ``read_committed=True``)."""
MAX_TIMESTAMP = -3
"""``list_offsets``: the offset of the record with the largest timestamp."""


_TopicConfig = create_topics.CreatableTopicConfig
_ReplicaAssignment = create_topics.CreatableReplicaAssignment


class TopicAdmin(AdminBase):
    # ------------------------------------------------------------------ topics

    async def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """Names of the cluster's topics, sorted."""
        answer = await self._metadata(None)
        return sorted(t.name for t in answer.topics if include_internal or not t.is_internal)

    async def describe_topics(self, names: list[str]) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and ISR of each topic; UnknownTopicOrPartitionError for a missing one."""
        answer = await self._metadata(list(names), lambda r: retry_code(t.error_code for t in r.topics))
        found = {}
        for topic in answer.topics:
            check(topic.error_code, f"topic {topic.name}")
            found[topic.name] = TopicDescription(
                name=topic.name, internal=bool(topic.is_internal), topic_id=_topic_id(topic.topic_id),
                partitions=sorted((PartitionInfo(p.partition_index, p.leader_id, list(p.replica_nodes),
                                                 list(p.isr_nodes), p.leader_epoch) for p in topic.partitions),
                                  key=lambda p: p.partition))
        return found

    async def create_topics(self, topics: list[NewTopic], *, validate_only: bool = False,
                            timeout_ms: int = 30000) -> None:
        """Create topics (or only validate the request, with ``validate_only``)."""
        wanted = {t.name: create_topics.CreatableTopic(
            name=t.name, num_partitions=-1 if t.assignments else t.num_partitions,
            replication_factor=-1 if t.assignments else t.replication_factor,
            assignments=[_ReplicaAssignment(partition_index=p, broker_ids=b) for p, b in sorted(t.assignments.items())],
            configs=[_TopicConfig(name=k, value=v) for k, v in t.configs.items()]) for t in topics}

        await self._each_topic(list(wanted), ApiKey.CREATE_TOPICS, lambda names: create_topics.REQUEST(
            timeout_ms=timeout_ms, validate_only=validate_only, topics=[wanted[n] for n in names]),
            lambda answer: [(r.name, r.error_code, r.error_message) for r in answer.topics])

    async def delete_topics(self, names: list[str], *, timeout_ms: int = 30000) -> None:
        """Delete topics; UnknownTopicOrPartitionError for one that does not exist."""
        await self._each_topic(list(names), ApiKey.DELETE_TOPICS, lambda pending: delete_topics.REQUEST(
            topic_names=pending, timeout_ms=timeout_ms),
            lambda answer: [(r.name, r.error_code, None) for r in answer.responses])

    async def create_partitions(self, new_counts: dict[str, int], *, validate_only: bool = False,
                                timeout_ms: int = 30000) -> None:
        """Raise each topic's partition count to the given total (InvalidPartitionsError if not larger)."""
        await self._each_topic(list(new_counts), ApiKey.CREATE_PARTITIONS, lambda names: create_partitions.REQUEST(
            timeout_ms=timeout_ms, validate_only=validate_only, topics=[
                create_partitions.Topic(name=n, count=new_counts[n], assignments=None) for n in names]),
            lambda answer: [(r.name, r.error_code, r.error_message) for r in answer.results])

    async def _each_topic(self, names: list[str], api_key: ApiKey, build: Callable[[list[str]], Any],
                          results: Callable[[Any], Iterable[tuple[str, int, str | None]]]) -> None:
        """Send for the topics still pending until each has a final answer, then raise the first failure.

        A retriable answer (NOT_CONTROLLER, REQUEST_TIMED_OUT, ...) sends again only the topics
        that got it, as the Java Admin does: one created meanwhile must not come back as
        TOPIC_ALREADY_EXISTS. ``build`` sees the pending topics at each attempt.
        """
        pending = list(names)
        failures: list[BrokerResponseError] = []

        def settle(answer: Any) -> int:
            retry = 0
            for name, code, message in results(answer):
                if retry_code([code]):
                    retry = retry or code
                    continue
                if code:
                    failures.append(error_instance(code, f"topic {name}: {message}" if message else f"topic {name}",
                                                   request=api_key))
                if name in pending:
                    pending.remove(name)
            return retry
        await self._call(CONTROLLER, api_key, lambda _v: build(list(pending)), error_of=settle)
        if failures:
            raise failures[0]

    # ------------------------------------------------------------------ configs

    async def describe_configs(self, resources: list[ConfigResource], *, include_synonyms: bool = False
                               ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Every config of each resource with its value and source."""
        result: dict[ConfigResource, dict[str, ConfigEntry]] = {}
        for node, group in self._config_routes(resources).items():
            request = describe_configs.REQUEST(include_synonyms=include_synonyms, resources=[
                describe_configs.Resource(resource_type=r.type, resource_name=r.name, configuration_keys=None)
                for r in group])

            answer = await self._send_config_request(node, ApiKey.DESCRIBE_CONFIGS, request,
                                                     lambda a: retry_code(r.error_code for r in a.results))
            for r in answer.results:
                check(r.error_code, f"{ResourceType(r.resource_type).name} {r.resource_name}: "
                                    f"{r.error_message or ''}".rstrip(": "))
                result[ConfigResource(ResourceType(r.resource_type), r.resource_name)] = {
                    e.name: ConfigEntry(e.name, e.value, _source(e.config_source), bool(e.read_only),
                                        bool(e.is_sensitive),
                                        tuple((s.name, s.value, _source(s.source)) for s in e.synonyms))
                    for e in r.configs}
        return result

    async def alter_configs(self, configs: dict[ConfigResource, dict[str, str]], *,
                            validate_only: bool = False) -> None:
        """Legacy AlterConfigs: each resource's dynamic configs become exactly ``configs[resource]``."""
        for node, group in self._config_routes(configs).items():
            request = alter_configs.REQUEST(validate_only=validate_only, resources=[
                alter_configs.Resource(resource_type=r.type, resource_name=r.name, configs=[
                    alter_configs.AlterableConfig(name=k, value=v) for k, v in configs[r].items()])
                for r in group])
            await self._alter(node, ApiKey.ALTER_CONFIGS, request)

    async def incremental_alter_configs(self, changes: dict[ConfigResource, list[AlterConfigOp]], *,
                                        validate_only: bool = False) -> None:
        """IncrementalAlterConfigs: SET, DELETE (back to the default), APPEND or SUBTRACT single configs."""
        for node, group in self._config_routes(changes).items():
            request = incremental_alter_configs.REQUEST(validate_only=validate_only, resources=[
                incremental_alter_configs.Resource(resource_type=r.type, resource_name=r.name, configs=[
                    incremental_alter_configs.AlterableConfig(name=op.name, config_operation=op.op, value=op.value)
                    for op in changes[r]])
                for r in group])
            await self._alter(node, ApiKey.INCREMENTAL_ALTER_CONFIGS, request)

    async def _alter(self, node: int | None, api_key: ApiKey, request: Any) -> None:
        answer = await self._send_config_request(node, api_key, request,
                                                 lambda a: retry_code(r.error_code for r in a.responses))
        _raise_first((r.error_code, f"{ResourceType(r.resource_type).name} {r.resource_name}: "
                                    f"{r.error_message or ''}".rstrip(": ")) for r in answer.responses)

    @staticmethod
    def _config_routes(resources: Iterable[ConfigResource]) -> dict[int | None, list[ConfigResource]]:
        # A broker's own configs are asked of that broker (as the Java Admin does); the rest of any broker.
        routes: dict[int | None, list[ConfigResource]] = {}
        for resource in resources:
            node = (int(resource.name) if resource.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER)
                    and resource.name.isdigit() else None)
            routes.setdefault(node, []).append(resource)
        return routes

    async def _send_config_request(self, node: int | None, api_key: ApiKey, request: Any,
                                   error_of: Callable[[Any], int]) -> Any:
        if node is not None and node not in self.cluster.nodes:
            await self.cluster.refresh([], allow_auto_create=False, deadline=self._deadline())
        # An id no broker has: any broker answers for it (Kafka's "Unexpected broker id"), where the
        # Java Admin would wait for that node until its timeout.
        target = Broker(node) if node is not None and node in self.cluster.nodes else CONTROLLER
        return await self._call(target, api_key, lambda _v: request, error_of=error_of)

    # ------------------------------------------------------------------ records and offsets

    async def delete_records(self, before: dict[TopicPartition, int], *, timeout_ms: int = 30000
                             ) -> dict[TopicPartition, int]:
        """Delete records below the given offsets (-1: the high watermark); the new low watermarks."""
        def build(_v: int, partitions: list[TopicPartition]) -> Any:
            return delete_records.REQUEST(timeout_ms=timeout_ms, topics=[
                delete_records.RequestTopic(name=topic, partitions=[
                    delete_records.RequestPartition(partition_index=p, offset=before[TopicPartition(topic, p)])
                    for p in indexes])
                for topic, indexes in by_topic(partitions).items()])
        answers = await self._per_leader(before, ApiKey.DELETE_RECORDS, build, lambda answer: (
            (TopicPartition(t.name, p.partition_index), p.error_code, p) for t in answer.topics for p in t.partitions))
        for tp, p in answers.items():
            check(p.error_code, f"{tp.topic}-{tp.partition}")
        return {tp: p.low_watermark for tp, p in answers.items()}

    async def list_offsets(self, specs: dict[TopicPartition, int], *, read_committed: bool = False
                           ) -> dict[TopicPartition, int]:
        """Offsets by timestamp per partition (EARLIEST -2, LATEST -1, or a timestamp in ms; -1 if none)."""
        def build(_v: int, partitions: list[TopicPartition]) -> Any:
            return list_offsets.REQUEST(replica_id=-1, isolation_level=int(read_committed), topics=[
                list_offsets.RequestTopic(name=topic, partitions=[
                    list_offsets.RequestPartition(partition_index=p, timestamp=specs[TopicPartition(topic, p)])
                    for p in indexes])
                for topic, indexes in by_topic(partitions).items()])
        answers = await self._per_leader(specs, ApiKey.LIST_OFFSETS, build, lambda answer: (
            (TopicPartition(t.name, p.partition_index), p.error_code, p) for t in answer.topics for p in t.partitions))
        for tp, p in answers.items():
            check(p.error_code, f"{tp.topic}-{tp.partition}")
        return {tp: p.offset for tp, p in answers.items()}

    # ------------------------------------------------------------------ cluster

    async def describe_cluster(self, *, include_authorized_operations: bool = False) -> ClusterDescription:
        """Cluster id, controller and brokers (DescribeCluster)."""
        answer = await self._call(ANY_BROKER, ApiKey.DESCRIBE_CLUSTER, lambda _v: describe_cluster.REQUEST(
            include_cluster_authorized_operations=include_authorized_operations), highest=1)
        check(answer.error_code, answer.error_message)
        operations = answer.cluster_authorized_operations
        return ClusterDescription(answer.cluster_id, answer.controller_id,
                                  [BrokerInfo(b.broker_id, b.host, b.port, b.rack) for b in answer.brokers],
                                  None if operations == INT32_MIN else operations)


def _topic_id(raw: bytes | None) -> str | None:
    """Kafka's topic id in its usual base64 spelling (None before Metadata v10, or all zeros)."""
    if not raw or not any(raw):
        return None
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


def _source(code: int) -> ConfigSource:
    try:
        return ConfigSource(code)
    except ValueError:
        return ConfigSource.UNKNOWN


def _raise_first(results: Iterable[tuple[int, str]]) -> None:
    """Raise for the first (code, message) that is an error."""
    for code, message in results:
        check(code, message)
