"""Consumer groups with subscribe() in confluent-kafka, aiokafka and kafka-python.

Each member runs in its own process (``group_member.py``) so that it can leave
properly (SIGTERM) or die (SIGKILL) while the others carry on.
"""

import pytest

from tests.compat.groups import Member, produce, shares
from tests.support.waiting import wait_until
from tests.support.topics import create_topic

CLIENTS = ["confluent-kafka", "aiokafka", "kafka-python"]


@pytest.mark.parametrize("client", CLIENTS)
def test_group_of_three_shares_partitions_and_hands_them_on(group_broker, members, client, topic_name):
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, topic_name, 6)
    produce(bootstrap, topic_name, 6, 5)
    members.extend(Member(client, bootstrap, "shared", topic_name) for _ in range(3))
    first, second, third = members
    wait_until(lambda: shares(members, 6) and all(m.assignment for m in members),
               lambda: f"three members sharing; assignments {[m.assignment for m in members]}", 60)
    third.kill()  # dies: no LeaveGroup, no more heartbeats; its session times out
    wait_until(lambda: shares([first, second], 6), "the dead member's partitions to move", 30)
    assert group_broker.log_contains("missed its session timeout")
    second.leave()  # leaves: LeaveGroup, rebalance at once
    wait_until(lambda: shares([first], 6), "the last member to own everything", 30)
    everything = {f"{p}-{i}" for p in range(6) for i in range(5)}
    wait_until(lambda: {value for m in members for _p, _o, value in m.records} == everything,
               "every record to have been read by some member", 30)
    first.leave()


@pytest.mark.parametrize("client", CLIENTS)
def test_committed_offsets_resume_after_consumer_restart_and_broker_kill(group_broker, members, client, topic_name):
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, topic_name, 3)

    def consume_round(start: int) -> list[tuple[int, int, str]]:
        """Produce 10 more per partition; one member of the group reads exactly those and commits."""
        produce(bootstrap, topic_name, 3, 10, start)
        member = Member(client, bootstrap, "resume", topic_name)
        members.append(member)
        wait_until(lambda: member.committed == {p: start + 10 for p in range(3)},
                   f"commits up to {start + 10}", 60)
        member.leave()
        return member.records

    assert sorted(consume_round(0)) == [(p, o, f"{p}-{o}") for p in range(3) for o in range(10)]
    assert sorted(consume_round(10)) == [(p, o, f"{p}-{o}") for p in range(3) for o in range(10, 20)]
    group_broker.kill()
    group_broker.start()
    assert sorted(consume_round(20)) == [(p, o, f"{p}-{o}") for p in range(3) for o in range(20, 30)]


@pytest.mark.parametrize("client", CLIENTS)
def test_static_member_restart_keeps_its_partitions_without_a_rebalance(group_broker, members, client, topic_name):
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, topic_name, 4)
    static = Member(client, bootstrap, "static", topic_name, instance="worker-1", session_ms=15000)
    dynamic = Member(client, bootstrap, "static", topic_name)
    members.extend([static, dynamic])
    wait_until(lambda: shares([static, dynamic], 4) and static.assignment and dynamic.assignment,
               "two members sharing", 60)
    rebalances = sum("preparing to rebalance" in line for line in group_broker.lines)
    owned = set(static.assignment)
    static.kill()  # within its session a restarted static member is the same member (KIP-345)
    restarted = Member(client, bootstrap, "static", topic_name, instance="worker-1", session_ms=15000)
    members.append(restarted)
    wait_until(lambda: bool(restarted.assignment), "the restarted member's assignment", 30)
    assert restarted.assignment == owned
    assert dynamic.assignment and shares([restarted, dynamic], 4)
    assert sum("preparing to rebalance" in line for line in group_broker.lines) == rebalances
