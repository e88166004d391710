"""MirrorMaker 2 in dedicated mode (``org.apache.kafka.connect.mirror.MirrorMaker``) as a child
process of the tests, one source cluster replicating into one target, with intervals of a second
so that topics, checkpoints and group offsets arrive within seconds."""

from __future__ import annotations

from tests.mirror.connect_process import ConnectProcess

IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"


def mm2_properties(source: str, target: str, topics: str, groups: str, identity: bool,
                   replication_factor: int = 1, sync_acls: bool = False) -> dict[str, str]:
    """The settings of one source->target flow, exactly-once, every offset synced; topic ACLs
    too with ``sync_acls`` (both clusters then need an authorizer)."""
    flow = "source->target"
    factor = str(replication_factor)
    return {
        "clusters": "source, target",
        "source.bootstrap.servers": source,
        "target.bootstrap.servers": target,
        f"{flow}.enabled": "true",
        "target->source.enabled": "false",
        f"{flow}.topics": topics,
        f"{flow}.groups": groups,
        "replication.policy.class": IDENTITY_POLICY if identity else DEFAULT_POLICY,
        # KIP-618: the target's Connect worker writes records and source offsets in one transaction
        "target.exactly.once.source.support": "enabled",
        "source.exactly.once.source.support": "enabled",
        # one offset sync per replicated record: the finest translation MM2 can give
        "offset.lag.max": "0",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1",
        "emit.checkpoints.interval.seconds": "1",
        "emit.heartbeats.interval.seconds": "1",
        "refresh.topics.interval.seconds": "1",
        "refresh.groups.interval.seconds": "1",
        "sync.topic.configs.interval.seconds": "1",
        "sync.topic.acls.enabled": str(sync_acls).lower(),
        "sync.topic.acls.interval.seconds": "1",
        "tasks.max": "1",
        "replication.factor": factor,
        "checkpoints.topic.replication.factor": factor,
        "heartbeats.topic.replication.factor": factor,
        "offset-syncs.topic.replication.factor": factor,
        "config.storage.replication.factor": factor,
        "offset.storage.replication.factor": factor,
        "status.storage.replication.factor": factor,
    }


class MirrorMakerProcess(ConnectProcess):
    """``start()`` launches MM2 and returns; callers wait on what it writes to the clusters."""

    kind = "mirror-maker"
    name = "mm2"
    main_class = "org.apache.kafka.connect.mirror.MirrorMaker"
