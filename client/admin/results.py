"""The typed values the Admin client takes and returns (Kafka's admin names, Python spelling)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from ..types import TopicPartition


class ResourceType(IntEnum):
    """Kafka's ConfigResource.Type ids (Weir serves TOPIC, BROKER and GROUP)."""
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    GROUP = 32  # a share or consumer group's configs (share.auto.offset.reset, ...)


class ConfigSource(IntEnum):
    """Where a config value comes from (DescribeConfigs v1+ ``config_source``)."""
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class OpType(IntEnum):
    """IncrementalAlterConfigs operations (AlterConfigOp.OpType)."""
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class ConfigResource:
    """What a config belongs to: a topic, or a broker (``ConfigResource.topic(name)``, ``.broker(id)``)."""
    type: ResourceType
    name: str  # a topic name, or a broker id as a string ("" for the cluster-wide broker default)

    @classmethod
    def topic(cls, name: str) -> ConfigResource:
        """The configs of topic ``name``."""
        return cls(ResourceType.TOPIC, name)

    @classmethod
    def broker(cls, broker_id: int | str = "") -> ConfigResource:
        """The configs of broker ``broker_id``; ``""`` is the cluster-wide default every broker inherits."""
        return cls(ResourceType.BROKER, str(broker_id))


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One config as DescribeConfigs answers it: its value, where that value comes from
    (``source``) and the values it would fall back to (``synonyms``: name, value, source)."""
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool = False
    sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...] = ()

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True, slots=True)
class AlterConfigOp:
    """One change of ``incremental_alter_configs``: SET a value, DELETE (back to the default),
    APPEND to or SUBTRACT from a list."""
    name: str
    value: str | None = None
    op: OpType = OpType.SET


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create: -1 partitions or replication factor take the broker's defaults."""
    name: str
    num_partitions: int = -1  # -1: the broker's num.partitions
    replication_factor: int = -1  # -1: the broker's default.replication.factor
    configs: dict[str, str] = field(default_factory=dict)
    assignments: dict[int, list[int]] = field(default_factory=dict)  # partition -> broker ids


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition as Metadata describes it: its leader, replicas and in-sync replicas (broker ids)."""
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class TopicDescription:
    """A topic and its partitions."""
    name: str
    internal: bool
    partitions: list[PartitionInfo]
    topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A broker of the cluster and its address."""
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    """The cluster's id, its controller and its brokers."""
    cluster_id: str | None
    controller_id: int
    brokers: list[BrokerInfo]
    authorized_operations: int | None = None  # Kafka's AclOperation bit set, when asked for


@dataclass(frozen=True, slots=True)
class GroupListing:
    """A group as ListGroups lists it."""
    group_id: str
    protocol_type: str
    state: str | None = None  # ListGroups v4+
    group_type: str | None = None  # ListGroups v5+


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """A group member. ``member_epoch`` and ``target_assignment`` are filled for consumer-protocol
    groups (KIP-848) only."""
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[TopicPartition]  # decoded for "consumer" groups, else empty
    # A member of a consumer-protocol group (KIP-848, ConsumerGroupDescribe); None for a classic group's.
    member_epoch: int | None = None
    target_assignment: list[TopicPartition] | None = None
    upgraded: bool | None = None  # speaks the consumer protocol (KIP-1099's member type), not JoinGroup


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A group: its state, type (``classic`` or ``consumer``), assignor and members."""
    group_id: str
    state: str
    protocol_type: str
    protocol: str  # the assignor of a consumer group
    members: list[MemberDescription]
    coordinator_id: int = -1
    group_type: str = "classic"  # "consumer": a KIP-848 group, with the epochs below
    group_epoch: int | None = None
    target_assignment_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class ShareMemberDescription:
    """A share group member (KIP-932) as ShareGroupDescribe describes it."""
    member_id: str
    client_id: str
    client_host: str
    member_epoch: int
    subscribed_topics: list[str]
    assignment: list[TopicPartition]
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    """A share group: its state, epochs, assignor and members."""
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[ShareMemberDescription]
    coordinator_id: int = -1


@dataclass(frozen=True, slots=True)
class SharePartitionOffset:
    """A share-partition's start offset as DescribeShareGroupOffsets reports it: -1 (and a lag of -1)
    for a partition the group has not started reading; ``lag`` is -1 from a broker before v1."""
    start_offset: int
    leader_epoch: int
    lag: int


@dataclass(frozen=True, slots=True)
class TransactionListing:
    """A transactional id as ListTransactions lists it."""
    transactional_id: str
    producer_id: int
    state: str
    coordinator_id: int = -1


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """A transactional id's current transaction as DescribeTransactions describes it."""
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int  # -1 when no transaction is open
    topic_partitions: list[TopicPartition]
    coordinator_id: int = -1


@dataclass(frozen=True, slots=True)
class ProducerState:
    """One active producer of a partition, as DescribeProducers reports it.

    ``coordinator_epoch`` and ``current_transaction_start_offset`` are -1 when
    absent (Kafka's Optional.empty)."""
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_transaction_start_offset: int

    @property
    def in_transaction(self) -> bool:
        return self.current_transaction_start_offset >= 0


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    """A transaction a partition holds open (what ``find_hanging_transactions`` reports)."""
    topic_partition: TopicPartition
    producer: ProducerState


@dataclass(frozen=True, slots=True)
class AbortTransactionSpec:
    """What WriteTxnMarkers needs to abort one producer's transaction on one partition."""
    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
