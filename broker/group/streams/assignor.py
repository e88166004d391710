"""Kafka's sticky task assignor ("sticky", ``group.streams.assignors``), our own implementation.

A task is (subtopology id, partition). Active tasks are spread evenly over the members: each gets
the floor or the ceiling of tasks / members, and a task stays with the member that had it, or else
goes to a member of the process that had it (an instance restarted from the same state directory
keeps its process id, so its state stores stay useful), else to the least loaded member. Standby
tasks (``num_standby_replicas`` per active task) go to members of other processes than the
task's active one and than each other, preferring a process that had the task before (warm
state), then the least loaded member.

Simplification: no warm-up tasks (Kafka's sticky assignor moves a task at once too; the warm-up
phase belongs to its high-availability assignor, which Weir does not offer) and no rack-aware
placement (``streams.rack.aware.assignment.tags`` is accepted and ignored).
"""

from __future__ import annotations

from dataclasses import dataclass, field

NAME = "sticky"

Tasks = dict[str, frozenset[int]]  # subtopology id -> partitions


@dataclass(frozen=True)
class MemberSpec:
    process_id: str
    active: Tasks = field(default_factory=dict)    # what the member had: current assignment
    standby: Tasks = field(default_factory=dict)


@dataclass
class Assigned:
    active: dict[str, set[int]] = field(default_factory=dict)
    standby: dict[str, set[int]] = field(default_factory=dict)

    def count(self) -> int:
        return sum(map(len, self.active.values())) + sum(map(len, self.standby.values()))

    def frozen(self) -> tuple[Tasks, Tasks]:
        return ({s: frozenset(p) for s, p in sorted(self.active.items()) if p},
                {s: frozenset(p) for s, p in sorted(self.standby.items()) if p})


def assign(members: dict[str, MemberSpec], tasks: dict[str, int],
           num_standby_replicas: int) -> dict[str, tuple[Tasks, Tasks]]:
    """member id -> (active tasks, standby tasks)."""
    if not members:
        return {}
    order = sorted(members)
    result = {member_id: Assigned() for member_id in order}
    all_tasks = [(s, p) for s in sorted(tasks) for p in range(tasks[s])]
    low, extra = divmod(len(all_tasks), len(order))  # ``extra`` members may have one more
    active_count = dict.fromkeys(order, 0)
    owner: dict[tuple[str, int], str] = {}

    def room(member_id: str) -> bool:
        nonlocal extra
        count = active_count[member_id]
        if count < low:
            return True
        return count == low and extra > 0

    def give(member_id: str, task: tuple[str, int]) -> None:
        nonlocal extra
        if active_count[member_id] == low:
            extra -= 1
        active_count[member_id] += 1
        owner[task] = member_id
        result[member_id].active.setdefault(task[0], set()).add(task[1])

    previous = {(s, p): m for m in order for s, parts in members[m].active.items() for p in parts}
    for task in all_tasks:  # stickiness to the member
        member_id = previous.get(task)
        if member_id is not None and room(member_id):
            give(member_id, task)
    by_process: dict[str, list[str]] = {}
    for member_id in order:
        by_process.setdefault(members[member_id].process_id, []).append(member_id)
    previous_process = {(s, p): members[m].process_id for m in members for s, parts in members[m].active.items()
                        for p in parts}
    for task in all_tasks:  # then to the process, then to the least loaded
        if task in owner:
            continue
        same = [m for m in by_process.get(previous_process.get(task, ""), ()) if room(m)]
        candidates = same or [m for m in order if room(m)]
        give(min(candidates, key=lambda m: (active_count[m], m)), task)
    if num_standby_replicas > 0:
        _standbys(members, order, result, owner, all_tasks, num_standby_replicas)
    return {member_id: assigned.frozen() for member_id, assigned in result.items()}


def _standbys(members: dict[str, MemberSpec], order: list[str], result: dict[str, Assigned],
              owner: dict[tuple[str, int], str], all_tasks: list[tuple[str, int]], replicas: int) -> None:
    had = {(s, p): {members[m].process_id for m in members
                    if p in members[m].standby.get(s, ()) or p in members[m].active.get(s, ())}
           for s, p in all_tasks}
    for task in all_tasks:
        used = {members[owner[task]].process_id}
        for _ in range(replicas):
            candidates = [m for m in order if members[m].process_id not in used]
            if not candidates:
                break  # Kafka logs that fewer standbys than asked could be placed
            chosen = min(candidates, key=lambda m: (members[m].process_id not in had[task], result[m].count(), m))
            used.add(members[chosen].process_id)
            result[chosen].standby.setdefault(task[0], set()).add(task[1])
