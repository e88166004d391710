"""The server-side assignors (uniform, range): complete, disjoint, balanced, and sticky — a member
joining or leaving moves only the partitions that must move."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.broker.group.consumer.assignors import ASSIGNORS, MemberSpec, configured, range_, uniform

T1, T2, T3 = b"\x01" * 16, b"\x02" * 16, b"\x03" * 16


def run(assignor, subscriptions, partitions, current=None):
    current = current or {}
    return assignor({m: MemberSpec(frozenset(topics), current.get(m, {})) for m, topics in subscriptions.items()},
                    partitions)


def flat(assignment):
    return {(t, p) for t, parts in assignment.items() for p in parts}


def check_complete_and_disjoint(result, subscriptions, partitions):
    owned = [tp for a in result.values() for tp in flat(a)]
    assert len(owned) == len(set(owned))
    wanted = {(t, p) for t, n in partitions.items() if any(t in s for s in subscriptions.values()) for p in range(n)}
    assert set(owned) == wanted
    for member, assignment in result.items():
        assert set(assignment) <= set(subscriptions[member])


@pytest.mark.parametrize("assignor", [uniform, range_])
@pytest.mark.parametrize("members,count", [(1, 6), (3, 60), (4, 7), (7, 3)])
def test_balanced_with_one_topic(assignor, members, count):
    subscriptions = {f"m{i}": {T1} for i in range(members)}
    result = run(assignor, subscriptions, {T1: count})
    check_complete_and_disjoint(result, subscriptions, {T1: count})
    sizes = [len(flat(a)) for a in result.values()]
    assert max(sizes) - min(sizes) <= 1


def test_range_gives_co_partitioned_topics_the_same_numbers():
    result = run(range_, {"a": {T1, T2}, "b": {T1, T2}}, {T1: 4, T2: 4})
    assert result["a"] == {T1: frozenset({0, 1}), T2: frozenset({0, 1})}
    assert result["b"] == {T1: frozenset({2, 3}), T2: frozenset({2, 3})}


@pytest.mark.parametrize("assignor", [uniform, range_])
def test_a_fourth_member_takes_only_its_share_from_three(assignor):
    """3 members, 60 partitions: the newcomer gets 15 and nobody else loses more than it must."""
    subs = {m: {T1} for m in "abc"}
    first = run(assignor, subs, {T1: 60})
    subs["d"] = {T1}
    second = run(assignor, subs, {T1: 60}, current=first)
    check_complete_and_disjoint(second, subs, {T1: 60})
    moved = sum(len(flat(first[m]) - flat(second[m])) for m in "abc")
    assert [len(flat(second[m])) for m in "abcd"] == [15, 15, 15, 15]
    if assignor is uniform:
        assert moved == 15  # exactly what the newcomer needs
    else:
        assert moved <= 30  # range keeps contiguous ranges: a and b keep theirs, c gives up part of its


def test_uniform_leaver_moves_only_its_partitions():
    subs = {m: {T1, T2} for m in "abcd"}
    first = run(uniform, subs, {T1: 10, T2: 10})
    del subs["d"]
    second = run(uniform, subs, {T1: 10, T2: 10}, current=first)
    check_complete_and_disjoint(second, subs, {T1: 10, T2: 10})
    for m in "abc":
        assert flat(first[m]) <= flat(second[m])
    assert sorted(len(flat(second[m])) for m in "abc") == [6, 7, 7]


def test_uniform_with_different_subscriptions_is_complete_and_as_even_as_they_allow():
    subs = {"a": {T1}, "b": {T1, T2}, "c": {T2, T3}}
    result = run(uniform, subs, {T1: 4, T2: 4, T3: 4})
    check_complete_and_disjoint(result, subs, {T1: 4, T2: 4, T3: 4})
    assert sorted(len(flat(a)) for a in result.values()) == [4, 4, 4]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_uniform_properties(data):
    names = [f"m{i}" for i in range(data.draw(st.integers(1, 6)))]
    topics = {t: data.draw(st.integers(1, 12)) for t in (T1, T2, T3)}
    subs = {m: set(data.draw(st.lists(st.sampled_from([T1, T2, T3]), min_size=1, max_size=3))) for m in names}
    first = run(uniform, subs, topics)
    check_complete_and_disjoint(first, subs, topics)
    if all(s == subs[names[0]] for s in subs.values()):
        sizes = [len(flat(a)) for a in first.values()]
        assert max(sizes) - min(sizes) <= 1
    again = run(uniform, subs, topics, current=first)
    assert again == first  # nothing changed: nothing moves


def test_configured_names_and_kafka_class_names():
    assert configured("uniform,range") == ["uniform", "range"]
    assert configured("org.apache.kafka.coordinator.group.assignor.RangeAssignor") == ["range"]
    with pytest.raises(ValueError):
        configured("sticky")
    assert set(ASSIGNORS) == {"uniform", "range"}
    assert list(itertools.chain(configured(" range , uniform "))) == ["range", "uniform"]
