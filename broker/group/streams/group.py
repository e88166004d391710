"""A streams group and its members as the coordinator sees them.

Kafka's ``StreamsGroup`` and ``StreamsGroupMember``: the group epoch (bumped when members, the
topology or the topics' partition counts change), the topology, the target assignment and its
epoch, and the members with their epochs, reconciliation state and tasks. Active tasks are
reconciled by ``reconcile.py`` (Kafka's streams CurrentAssignmentBuilder: revoked before they are
given to another member, never owned by two), standby and warm-up tasks too. The state (Empty,
NotReady, Assigning, Reconciling, Stable) follows from these.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field

from ..consumer.member import MemberState
from .assignor import Tasks
from .topology import Configured, Topology

LEAVE_GROUP_EPOCH = -1
LEAVE_GROUP_STATIC_EPOCH = -2
JOIN_GROUP_EPOCH = 0


class StreamsGroupState(enum.Enum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"  # the topology cannot run yet: topics missing or mis-partitioned
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    topology_epoch: int = 0
    rebalance_timeout_ms: int = -1
    task_offsets: tuple[tuple[str, int, int], ...] = ()
    task_end_offsets: tuple[tuple[str, int, int], ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Tasks = field(default_factory=dict)  # active tasks: the names ``reconcile`` uses
    pending_revocation: Tasks = field(default_factory=dict)
    assignment_epochs: dict[tuple[str, int], int] = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)
    standby_pending_revocation: Tasks = field(default_factory=dict)
    warmup_pending_revocation: Tasks = field(default_factory=dict)

    def replace(self, **changes) -> StreamsMember:
        return dataclasses.replace(self, **changes)

    def assigned_at(self, subtopology_id: str, partition: int) -> int | None:
        if (partition not in self.assigned.get(subtopology_id, ())
                and partition not in self.pending_revocation.get(subtopology_id, ())):
            return None
        return self.assignment_epochs.get((subtopology_id, partition), self.member_epoch)


class StreamsGroup:
    def __init__(self, group_id: str):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.assignment_timestamp_ms = 0  # when the target was computed (0: never, or the group emptied)
        # Kafka's lastAssignmentConfigs: (name, value) pairs the assignor had at the last epoch bump
        self.assignment_configs: tuple[tuple[str, str], ...] = ()
        self.shutdown_requested_by: str | None = None  # the first member asking the application to stop
        self.topology: Topology | None = None
        self.configured: Configured | None = None  # the topology against the topics, at the group epoch
        self.members: dict[str, StreamsMember] = {}
        self.target: dict[str, tuple[Tasks, Tasks]] = {}  # member id -> (active, standby)
        self.endpoint_information_epoch = 0

    @property
    def state(self) -> StreamsGroupState:
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.configured is None or not self.configured.tasks:
            return StreamsGroupState.NOT_READY
        if self.assignment_epoch != self.group_epoch:
            return StreamsGroupState.ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE
               for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def static_member(self, instance_id: str) -> StreamsMember | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)
