"""Group admin APIs through kafka-python's and confluent-kafka's admin clients."""

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, MemberToRemove
from kafka.errors import NoError
from kafka.structs import OffsetAndMetadata

from tests.support.topics import create_topic
from tests.compat.groups import Member, produce
from tests.support.waiting import wait_until


def test_list_describe_delete_groups_and_offsets(group_broker, members, topic_name):
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    produce(bootstrap, topic_name, 2, 3)
    member = Member("kafka-python", bootstrap, "admin-group", topic_name)
    members.append(member)
    wait_until(lambda: member.committed == {0: 3, 1: 3}, "the member to commit everything", 60)
    kafka_admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    confluent_admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        assert kafka_admin.list_groups(states_filter=["stable"]) == [
            {"group_id": "admin-group", "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"}]
        assert kafka_admin.list_groups(states_filter=["empty"]) == []
        described = kafka_admin.describe_groups(["admin-group"])["admin-group"]
        assert (described["group_state"], described["protocol_type"], described["protocol_data"]) == (
            "Stable", "consumer", "range")
        (desc_member,) = described["members"]
        assert desc_member["client_host"] == "/127.0.0.1"
        assert desc_member["member_metadata"]["topics"] == [topic_name]
        assert desc_member["member_assignment"]["assigned_partitions"] == [
            {"topic": topic_name, "partitions": [0, 1]}]

        listed = confluent_admin.list_consumer_groups().result(10).valid
        assert [(g.group_id, g.state) for g in listed] == [("admin-group", ConsumerGroupState.STABLE)]
        confluent_described = confluent_admin.describe_consumer_groups(["admin-group"])["admin-group"].result(10)
        assert confluent_described.partition_assignor == "range"
        assert sorted(tp.partition for tp in confluent_described.members[0].assignment.topic_partitions) == [0, 1]
        committed = confluent_admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions("admin-group")])["admin-group"].result(10).topic_partitions
        assert sorted((tp.partition, tp.offset) for tp in committed) == [(0, 3), (1, 3)]

        # refused while the group is in use
        assert kafka_admin.delete_groups(["admin-group"]) == {"admin-group": "NonEmptyGroupError"}
        refused = kafka_admin.delete_group_offsets("admin-group", [TopicPartition(topic_name, 0)])
        assert refused[TopicPartition(topic_name, 0)].__name__ == "GroupSubscribedToTopicError"

        # LeaveGroup v3 on the member's behalf; then the member dies and the group empties
        removed = kafka_admin.remove_group_members("admin-group", [MemberToRemove(member_id=desc_member["member_id"])])
        assert list(removed.values()) == [NoError]
        member.kill()
        wait_until(lambda: kafka_admin.describe_groups(["admin-group"])["admin-group"]["group_state"] == "Empty",
                   "the group to empty", 30)

        # an empty group's offsets may be rewritten and deleted by admin tools
        assert list(kafka_admin.alter_group_offsets(
            "admin-group", {TopicPartition(topic_name, 0): OffsetAndMetadata(1, "", -1)}).values()) == [NoError]
        confluent_admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
            "admin-group", [ConfluentTopicPartition(topic_name, 1, 2)])])["admin-group"].result(10)
        offsets = kafka_admin.list_group_offsets({"admin-group": None})["admin-group"]
        assert {tp.partition: meta.offset for tp, meta in offsets.items()} == {0: 1, 1: 2}
        deleted = kafka_admin.delete_group_offsets("admin-group", [TopicPartition(topic_name, 0)])
        assert list(deleted.values()) == [NoError]
        assert confluent_admin.delete_consumer_groups(["admin-group"])["admin-group"].result(10) is None
        assert kafka_admin.list_groups() == []
        assert kafka_admin.list_group_offsets({"admin-group": None})["admin-group"] == {}
    finally:
        kafka_admin.close()
