"""The streams group's sticky task assignor and its topology check, without a broker."""

from __future__ import annotations

from weir.broker.group.streams.assignor import MemberSpec, assign
from weir.broker.group.streams.topology import (INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS,
                                                MISSING_SOURCE_TOPICS, Subtopology, TopicInfo, Topology, configure)

TASKS = {"0": 6, "1": 6}  # 12 tasks


def counts(result):
    return {m: sum(map(len, active.values())) for m, (active, _standby) in result.items()}


def held(result):
    return [(s, p) for active, _ in result.values() for s, parts in active.items() for p in parts]


def test_active_tasks_are_spread_evenly_and_once():
    result = assign({m: MemberSpec(f"process-{m}") for m in "abcde"}, TASKS, 0)
    assert sorted(counts(result).values()) == [2, 2, 2, 3, 3]
    assert sorted(held(result)) == sorted((s, p) for s in TASKS for p in range(6))


def test_a_joining_member_takes_tasks_and_the_others_keep_theirs():
    before = assign({m: MemberSpec(f"process-{m}") for m in "ab"}, TASKS, 0)
    members = {m: MemberSpec(f"process-{m}", before[m][0]) for m in "ab"}
    members["c"] = MemberSpec("process-c")
    after = assign(members, TASKS, 0)
    assert counts(after) == {"a": 4, "b": 4, "c": 4}
    moved = sum(len(parts - after[m][0].get(s, frozenset())) for m in "ab" for s, parts in before[m][0].items())
    assert moved == 4  # only what the newcomer needed


def test_a_member_holding_state_gets_the_tasks_of_a_member_gone():
    before = assign({m: MemberSpec(f"process-{m}") for m in "abc"}, TASKS, 0)
    # a was killed and left; its replacement (a2) reports the offsets of the state it kept on disk, and
    # a newcomer (d) has no state: a2 gets a's tasks back (Kafka's rule: state holders before the least
    # loaded) up to its share, d the rest
    offsets = {(s, p): 100 for s, parts in before["a"][0].items() for p in parts}
    members = {m: MemberSpec(f"process-{m}", before[m][0]) for m in "bc"}
    members["d"] = MemberSpec("process-d")
    members["a2"] = MemberSpec("process-a", task_offsets=offsets)
    after = assign(members, TASKS, 0)
    assert counts(after) == {"a2": 3, "b": 3, "c": 3, "d": 3}
    assert all(after["a2"][0][s] <= before["a"][0][s] for s in after["a2"][0])


def test_the_larger_offset_wins_among_state_holders():
    members = {"a": MemberSpec("pa", task_offsets={("0", 0): 5}), "b": MemberSpec("pb", task_offsets={("0", 0): 50})}
    result = assign(members, {"0": 2}, 0)
    assert result["b"][0] == {"0": frozenset({0})} and result["a"][0] == {"0": frozenset({1})}


def test_stateless_subtopologies_get_no_standby_tasks():
    members = {"a": MemberSpec("p1"), "b": MemberSpec("p2")}
    result = assign(members, {"0": 2, "1": 2}, 1, stateful=frozenset({"1"}))
    standby = {s for _active, standby in result.values() for s in standby}
    assert standby == {"1"} and sum(len(p) for _a, st in result.values() for p in st.values()) == 2


def test_standby_tasks_go_to_other_processes():
    members = {"a": MemberSpec("p1"), "b": MemberSpec("p1"), "c": MemberSpec("p2")}
    result = assign(members, {"0": 3}, 1, stateful=frozenset({"0"}))
    for member, (active, _) in result.items():
        for s, parts in active.items():
            for p in parts:
                standby_holders = [m for m, (_, standby) in result.items() if p in standby.get(s, ())]
                assert len(standby_holders) == 1
                assert members[standby_holders[0]].process_id != members[member].process_id


def _two_step(app="app"):
    return Topology(1, (
        Subtopology("0", source_topics=("in",), repartition_sink_topics=(f"{app}-rekey",)),
        Subtopology("1", repartition_source_topics=(TopicInfo(f"{app}-rekey"),),
                    state_changelog_topics=(TopicInfo(f"{app}-store-changelog", configs=(("cleanup.policy",
                                                                                           "compact"),)),)),
    ))


def test_internal_topics_take_the_source_partitions_and_are_missing_until_created():
    configured = configure(_two_step(), {"in": 5})
    assert configured.tasks == {}
    assert configured.statuses == [(MISSING_INTERNAL_TOPICS,
                                    "Internal topics are missing: app-rekey, app-store-changelog")]
    assert {name: partitions for name, (partitions, _info) in configured.to_create.items()} == {
        "app-rekey": 5, "app-store-changelog": 5}
    ready = configure(_two_step(), {"in": 5, "app-rekey": 5, "app-store-changelog": 5})
    assert (ready.tasks, ready.statuses) == ({"0": 5, "1": 5}, [])


def test_missing_sources_and_copartitioned_topics_of_different_sizes():
    missing = configure(_two_step(), {})
    assert [code for code, _ in missing.statuses] == [MISSING_SOURCE_TOPICS] and missing.tasks == {}
    joined = Topology(1, (Subtopology("0", source_topics=("left", "right"), copartition_groups=(((0, 1), (), ()),)),))
    assert [code for code, _ in configure(joined, {"left": 2, "right": 3}).statuses] == [
        INCORRECTLY_PARTITIONED_TOPICS]
    assert configure(joined, {"left": 3, "right": 3}).tasks == {"0": 3}
