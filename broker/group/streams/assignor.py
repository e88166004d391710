"""Kafka's sticky task assignor ("sticky", ``group.streams.assignors``), our own implementation of
the rules of Kafka 4.4's StickyTaskAssignor.

A task is (subtopology id, partition). Members count as capacity of their process; a process's load
is its tasks (active and standby) per member. Each member may take its share of the active tasks
(the ceiling of tasks / members still short of their share, recomputed as members fill). Active
tasks go, in this order: to the member that had the task, if it is still short of its share; to a
member that holds state for it (it had the task as a standby, or reports an offset for it in its
task offsets: previous standbys first, then the largest offset), preferring less loaded ones; else
to the least loaded member of the least loaded process. (An instance restarted from its state
directory reports offsets for the tasks it has state for, and so gets them back.)

Standby tasks (``num_standby_replicas`` each) go to stateful tasks only (subtopologies with
changelog topics), never twice to one process nor to the process running the task: to the member
that ran the task before it moved, then to members that hold state for it, then to the least loaded
process that lacks the task. A task for which no process is left gets fewer standbys (Kafka logs
a warning).

Warm-up tasks: Kafka 4.4.0 places none. Its ``AssignmentRefiner`` (which would add warm-ups for
``num.warmup.replicas`` and ``acceptable.recovery.lag``) returns the target unchanged, and
its target assignments carry empty warm-up sets; Weir's answers do the same. Rack-aware placement:
Kafka 4.4's sticky assignor ignores ``rack.aware.assignment.tags``, and so does this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NAME = "sticky"

Tasks = dict[str, frozenset[int]]  # subtopology id -> partitions
Task = tuple[str, int]


@dataclass(frozen=True)
class MemberSpec:
    process_id: str
    active: Tasks = field(default_factory=dict)    # what the member had: current assignment
    standby: Tasks = field(default_factory=dict)
    task_offsets: dict[Task, int] = field(default_factory=dict)  # as the member last reported them


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b) if b else 0


class _Quota:
    """Each member's share of ``total`` tasks, recomputed as members reach it (Kafka's rule)."""

    def __init__(self, total: int, members: int):
        self.total, self.members = total, members
        self.share = _ceil_div(total, members)

    def count(self, new_count: int) -> None:
        if new_count == self.share:
            self.members -= 1
            self.total -= new_count
            self.share = _ceil_div(self.total, self.members)


class _State:
    def __init__(self, members: dict[str, MemberSpec], tasks: dict[str, int], replicas: int, stateful: frozenset[str]):
        self.members = members
        self.order = sorted(members)
        self.count = dict.fromkeys(self.order, 0)  # tasks per member, active and standby
        self.process_members: dict[str, list[str]] = {}
        for member_id in self.order:
            self.process_members.setdefault(members[member_id].process_id, []).append(member_id)
        self.process_tasks: dict[str, set[Task]] = {p: set() for p in self.process_members}
        active_total = sum(tasks.values())
        standby_total = sum(count for s, count in tasks.items() if s in stateful) * replicas
        self.active_quota = _Quota(active_total, len(self.order))
        self.total_quota = _Quota(active_total + standby_total, len(self.order))
        self.active: dict[str, dict[str, set[int]]] = {m: {} for m in self.order}
        self.standby: dict[str, dict[str, set[int]]] = {m: {} for m in self.order}
        self.previous_active = {(s, p): m for m in self.order for s, parts in members[m].active.items()
                                for p in parts}
        self.state_holders = self._rank_state_holders()

    def _rank_state_holders(self) -> dict[Task, list[str]]:
        """Per task, the members with state for it: previous standbys first, then by offset, largest first."""
        candidates: dict[Task, list[tuple[bool, int, str]]] = {}
        for member_id in self.order:
            spec = self.members[member_id]
            standby = {(s, p) for s, parts in spec.standby.items() for p in parts}
            for task in standby:
                candidates.setdefault(task, []).append((False, -spec.task_offsets.get(task, 0), member_id))
            for task, offset in spec.task_offsets.items():
                if task not in standby:
                    candidates.setdefault(task, []).append((True, -offset, member_id))
        return {task: [m for *_key, m in sorted(found, key=lambda c: (c[0], c[1]))]
                for task, found in candidates.items()}

    def load(self, process_id: str) -> float:
        return len(self.process_tasks[process_id]) / len(self.process_members[process_id])

    def give(self, member_id: str, task: Task, active: bool) -> int:
        self.process_tasks[self.members[member_id].process_id].add(task)
        (self.active if active else self.standby)[member_id].setdefault(task[0], set()).add(task[1])
        self.count[member_id] += 1
        return self.count[member_id]

    def give_active(self, member_id: str, task: Task) -> None:
        new_count = self.give(member_id, task, True)
        self.active_quota.count(new_count)
        self.total_quota.count(new_count)

    def least_loaded_state_holder(self, task: Task, exclude_holders: bool) -> str | None:
        """Kafka's pick among the ranked holders: a later one wins only if both its process and it are
        less loaded."""
        chosen, best = None, (float("inf"), float("inf"))
        for member_id in self.state_holders.get(task, ()):
            process_id = self.members[member_id].process_id
            if exclude_holders and task in self.process_tasks[process_id]:
                continue
            loads = (self.load(process_id), self.count[member_id])
            if chosen is None or (loads[0] < best[0] and loads[1] < best[1]):
                chosen, best = member_id, loads
        return chosen

    def least_loaded_member(self, process_id: str) -> str:
        return min(self.process_members[process_id], key=lambda m: (self.count[m], m))

    def processes_by_load(self) -> list[str]:
        return sorted(self.process_members, key=lambda p: (self.load(p), p))


def assign(members: dict[str, MemberSpec], tasks: dict[str, int], num_standby_replicas: int,
           stateful: frozenset[str] = frozenset()) -> dict[str, tuple[Tasks, Tasks]]:
    """member id -> (active tasks, standby tasks). ``stateful``: subtopologies with state stores."""
    if not members:
        return {}
    state = _State(members, tasks, num_standby_replicas, stateful)
    _assign_active(state, [(s, p) for s in sorted(tasks) for p in range(tasks[s])])
    if num_standby_replicas > 0:
        _assign_standby(state, [(s, p) for s in sorted(tasks) if s in stateful for p in range(tasks[s])],
                        num_standby_replicas)
    return {m: ({s: frozenset(p) for s, p in sorted(state.active[m].items())},
                {s: frozenset(p) for s, p in sorted(state.standby[m].items())}) for m in state.order}


def _assign_active(state: _State, all_tasks: list[Task]) -> None:
    def short(member_id: str) -> bool:
        return state.count[member_id] < state.active_quota.share

    left = sorted(all_tasks, key=lambda t: (t[1], t[0]))
    for pick in (state.previous_active.get, lambda task: state.least_loaded_state_holder(task, exclude_holders=False)):
        remaining = []
        for task in left:
            member_id = pick(task)
            if member_id is not None and short(member_id):
                state.give_active(member_id, task)
            else:
                remaining.append(task)
        left = remaining
    for task in sorted(left):
        process_id = state.processes_by_load()[0]
        state.give_active(state.least_loaded_member(process_id), task)


def _assign_standby(state: _State, stateful_tasks: list[Task], replicas: int) -> None:
    def room(member_id: str) -> bool:
        return state.count[member_id] < state.total_quota.share

    def give(member_id: str, task: Task) -> None:
        state.total_quota.count(state.give(member_id, task, False))

    to_least_loaded: list[tuple[Task, int]] = []
    for task in sorted(stateful_tasks, key=lambda t: (t[1], t[0]), reverse=True):
        for placed in range(replicas):
            before = state.previous_active.get(task)
            if (before is not None and task not in state.process_tasks[state.members[before].process_id]
                    and room(before)):
                give(before, task)
                continue
            holder = state.least_loaded_state_holder(task, exclude_holders=True)
            if holder is not None and room(holder):
                give(holder, task)
                continue
            to_least_loaded.append((task, replicas - placed))
            break
    for task, remaining in sorted(to_least_loaded, reverse=True):
        for _ in range(remaining):
            process_id = next((p for p in state.processes_by_load() if task not in state.process_tasks[p]), None)
            if process_id is None:
                break  # Kafka logs that there is not enough capacity for the standbys asked for
            give(state.least_loaded_member(process_id), task)
