"""KIP-848 group records as Kafka lays them out: key = int16 record type + key fields; value = int16
version 0 + flexible fields with tagged ones (MetadataHash, AssignmentEpochs); round trips."""

from weir.broker.group.consumer import records as r

TOPIC = bytes(range(16))


def test_keys_are_the_record_type_then_the_ids():
    key, value = r.GroupRecord(r.GROUP_METADATA, "g").encode()
    assert (key, value) == (b"\x00\x03\x00\x01g", None)
    key, _ = r.GroupRecord(r.CURRENT_MEMBER_ASSIGNMENT, "g", "m").encode()
    assert key == b"\x00\x08\x00\x01g\x00\x01m"
    assert r.is_consumer_group_key(key) and not r.is_consumer_group_key(b"\x00\x01\x00\x01g")


def test_group_metadata_value_with_its_tagged_hash():
    record = r.GroupRecord(r.GROUP_METADATA, "g", value=r.GroupMetadataValue(epoch=3, metadata_hash=77))
    key, value = record.encode()
    # version 0, epoch 3, one tagged field: tag 0, 8 bytes, 77
    assert value == b"\x00\x00" + b"\x00\x00\x00\x03" + b"\x01\x00\x08" + (77).to_bytes(8, "big")
    assert r.decode(key, value) == record
    without_hash = r.GroupRecord(r.GROUP_METADATA, "g", value=r.GroupMetadataValue(epoch=3))
    assert without_hash.encode()[1] == b"\x00\x00\x00\x00\x00\x03\x00"  # the default is not written


def test_every_value_round_trips():
    values = [
        r.GroupRecord(r.MEMBER_METADATA, "g", "m", r.MemberMetadataValue(
            instance_id=None, rack_id="r1", client_id="c", client_host="/h", subscribed_topic_names=["a", "b"],
            subscribed_topic_regex=None, rebalance_timeout_ms=300000, server_assignor="uniform")),
        r.GroupRecord(r.TARGET_ASSIGNMENT_METADATA, "g", value=r.TargetAssignmentMetadataValue(assignment_epoch=4)),
        r.GroupRecord(r.TARGET_ASSIGNMENT_MEMBER, "g", "m", r.TargetAssignmentMemberValue(
            topic_partitions=[r.TopicPartition(topic_id=TOPIC, partitions=[0, 2])])),
        r.GroupRecord(r.CURRENT_MEMBER_ASSIGNMENT, "g", "m", r.CurrentMemberAssignmentValue(
            member_epoch=5, previous_member_epoch=4, state=1,
            assigned_partitions=[r.TopicPartitions(topic_id=TOPIC, partitions=[0, 1], assignment_epochs=[2, 5])],
            partitions_pending_revocation=[r.TopicPartitions(topic_id=TOPIC, partitions=[3],
                                                             assignment_epochs=[1])])),
    ]
    for record in values:
        assert r.decode(*record.encode()) == record


def test_partition_metadata_records_of_older_kafka_are_skipped():
    assert r.decode(b"\x00\x04\x00\x01g", b"\x00\x00\x01\x00") is None
