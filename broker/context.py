"""What every handler can reach: settings, the log store, the coordinators, the clock."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

from weir.broker.acl.authorizer import Authorizer
from weir.broker.acl.store import AclStore
from weir.broker.clock import Clock, SystemClock
from weir.broker.config import BrokerConfig
from weir.broker.dynamic_config import DynamicBrokerConfigs
from weir.broker.features import FinalizedFeatures
from weir.broker.log.manager import LogManager
from weir.broker.metrics import recorder_for
from weir.broker.quota.manager import QuotaManager
from weir.broker.quota.store import QuotaStore
from weir.broker.security.listeners import listener_specs
from weir.broker.security.delegation_tokens import DelegationTokens
from weir.broker.security.scram_store import ScramStore
from weir.broker.group.configs import GroupConfigs
from weir.broker.telemetry.instances import ClientInstances
from weir.broker.telemetry.receiver import TelemetryReceiver
from weir.broker.telemetry.subscriptions import ClientMetricsConfigs
from weir.broker.group.coordinator import GroupCoordinator
from weir.broker.group.expiry import OffsetExpiry
from weir.broker.group.offsets import OffsetStore
from weir.broker.share.manager import SharePartitionManager
from weir.broker.txn.coordinator import TransactionCoordinator
from weir.broker.txn.producer_ids import ProducerIdAllocator
from weir.broker.log import disk


def _load_meta(data_dir: Path, node_id: int) -> str:
    """cluster.id from meta.properties (as Kafka keeps it), created on first start."""
    path = data_dir / "meta.properties"
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
    cluster_id = uuid.uuid4().hex[:22]
    disk.replace_durably(path, f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n".encode())
    return cluster_id


@dataclass
class BrokerContext:
    config: BrokerConfig
    data_dir: Path
    host: str
    port: int
    clock: Clock = field(default_factory=SystemClock)
    initial_features: dict[str, int] = field(default_factory=dict)  # --feature: levels of a new data directory

    def __post_init__(self):
        self.data_dir = Path(self.data_dir)
        if not self.data_dir.is_dir():
            self.data_dir.mkdir(parents=True)
            disk.fsync_directory(self.data_dir.parent)  # as Kafka flushes a new log dir's parent
        self.node_id = self.config.node_id
        self.listeners = listener_specs(self.config, self.host, self.port)  # ConfigError before any file
        # the first listener's address; the server sets the port bound when it was 0
        first = self.listeners[0]
        self.advertised_host, self.advertised_port = first.advertised_host, first.advertised_port
        self.cluster_id = _load_meta(self.data_dir, self.node_id)
        self.features = FinalizedFeatures(self.data_dir, self.node_id, self.initial_features)
        self.dynamic_configs = DynamicBrokerConfigs(self.data_dir, self.config)
        self.dynamic_configs.load()  # before the log store: topic defaults depend on it
        self.group_configs = GroupConfigs(self.data_dir, self.config)  # GROUP config resources
        self.group_configs.load()
        self.client_metrics = ClientMetricsConfigs(self.data_dir)  # CLIENT_METRICS config resources (KIP-714)
        self.client_metrics.load()
        self.telemetry = ClientInstances(self.client_metrics, self.config["telemetry.max.bytes"])
        self.telemetry_receiver = TelemetryReceiver()  # the metrics clients push, for the metrics listener
        self.logs = LogManager(self.data_dir, self.config, self.clock)
        self.producer_ids = ProducerIdAllocator(self.data_dir)
        self.offsets = OffsetStore(self)
        self.share_partitions = SharePartitionManager(self)  # KIP-932 share-partition state and sessions
        self.groups = GroupCoordinator(self)
        self.offset_expiry = OffsetExpiry(self.groups)
        self.txn = TransactionCoordinator(self)
        self.scram = ScramStore(self.data_dir)  # SCRAM credentials (AlterUserScramCredentials)
        self.delegation_tokens = DelegationTokens(self.data_dir, self.config, self.clock)  # CreateDelegationToken
        self.authorizer = Authorizer(self.config, AclStore(self.data_dir))  # ACLs (CreateAcls) and decisions
        self.metrics = recorder_for(self.config)  # the no-op recorder unless metrics.listener is set
        self.quotas = QuotaManager(QuotaStore(self.data_dir), self.config)  # client quotas (broker/quota)

    def open(self) -> None:
        """Load the log store, then rebuild the coordinators by replaying their topics."""
        self.logs.open()
        self.scram.load()
        self.delegation_tokens.load()
        self.quotas.store.load()
        self.authorizer.store.load()
        self.groups.load()
        self.share_partitions.load()
        self.txn.load()

    def start_background_jobs(self) -> None:
        self.logs.start_background_jobs()
        self.txn.start()
        self.groups.start()
        self.offset_expiry.start()

    async def close(self) -> None:
        await self.offset_expiry.close()
        await self.groups.close()
        await self.share_partitions.close()
        await self.txn.close()
        await self.logs.close()
