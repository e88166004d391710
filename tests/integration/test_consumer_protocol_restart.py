"""kill -9 of Weir under a consumer-protocol group (KIP-848, confluent-kafka): the restarted broker
replays the group from ``__consumer_offsets`` and every member goes on at the same member epoch
with the same partitions (no rebalance: the group epoch does not move), and every record is
consumed exactly once across the crash."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import consumer_group_describe
from tests.broker_process import BrokerProcess
from tests.features.raw import ask
from tests.reference.test_consumer_protocol_confluent import PARTITIONS, Member, consumed, produce, wait_until

SETTINGS = {"offsets.topic.num.partitions": "4", "group.consumer.min.heartbeat.interval.ms": "500",
            "group.consumer.heartbeat.interval.ms": "500"}


def describe(broker, group: str):
    answer = ask(broker, ApiKey.CONSUMER_GROUP_DESCRIBE, 1,
                 consumer_group_describe.REQUEST(group_ids=[group], include_authorized_operations=False))
    described = answer.groups[0]
    assert described.error_code == 0, described.error_message
    members = {m.member_id: (m.member_epoch, sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions))
               for m in described.members}
    return described.group_epoch, described.assignment_epoch, described.group_state, members


def test_kill_9_keeps_members_epochs_and_assignments(tmp_path):
    broker = BrokerProcess(tmp_path / "data", overrides=SETTINGS).start()
    topic, group = "restart-topic", "restart-group"
    members = []
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
        expected = produce(broker.bootstrap, topic, "before", 120)
        members = [Member(broker.bootstrap, topic, group, name) for name in ("a", "b")]
        for member in members:
            member.start()
        wait_until(lambda: set(expected) <= set(consumed(members)), 60, "the records before the crash")
        wait_until(lambda: describe(broker, group)[2] == "Stable", 30, "a stable group")
        before = describe(broker, group)
        assert sorted(p for _, parts in before[3].values() for p in parts) == list(range(PARTITIONS))
        assert all(parts for _, parts in before[3].values())

        broker.kill()
        broker.start()
        after = describe(broker, group)
        assert after == before  # replayed: same epochs, members, member epochs and partitions
        expected += produce(broker.bootstrap, topic, "after", 120)
        wait_until(lambda: set(expected) <= set(consumed(members)), 60, "the records after the restart")
        assert describe(broker, group)[:2] == before[:2], "no rebalance after the restart"
    finally:
        for member in members:
            if member.is_alive():
                member.stop()
        broker.stop()
    assert sorted(consumed(members)) == sorted(expected), "each record exactly once"
    assert not [e for m in members for e in m.errors if "NO_OFFSET" not in e]
