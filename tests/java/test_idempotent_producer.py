"""The Java idempotent producer (enable.idempotence=true, acks=all, five in flight) against
each broker; confluent-kafka reads the result back."""

import subprocess
from collections import defaultdict

from tests.java.java_client import read_all, run
from tests.support.topics import create_topic
from reference.kafka import java_command

PARTITIONS = 3
COUNT = 400


def test_every_record_once_in_order_on_the_java_partitioners_partition(any_broker, topic_name):
    create_topic(any_broker.bootstrap, topic_name, PARTITIONS)
    events = run("IdempotentProduce", any_broker.bootstrap, topic_name, COUNT)
    sent = [event for event in events if event["event"] == "sent"]
    assert len(sent) == COUNT and events[-1]["event"] == "done"

    stored = read_all(any_broker.bootstrap, topic_name, PARTITIONS, isolation="read_uncommitted")
    assert sum(len(records) for records in stored.values()) == COUNT  # no duplicate, none lost
    partition_of_key: dict[str, set[int]] = defaultdict(set)
    for partition, records in stored.items():
        offsets = [record.offset() for record in records]
        assert offsets == list(range(len(records)))
        # in send order within the partition: value-i increases
        numbers = [int(record.value().decode().split("-")[1]) for record in records]
        assert numbers == sorted(numbers)
        for record in records:
            partition_of_key[record.key().decode()].add(partition)
    by_value = {event["value"]: event for event in sent}
    for partition, records in stored.items():
        for record in records:
            reported = by_value[record.value().decode()]
            assert (reported["partition"], reported["offset"]) == (partition, record.offset())
    # the default partitioner: a key always on one partition, the one Kafka's BuiltInPartitioner
    # computes for it (murmur2), asked of the Java code itself
    assert all(len(partitions) == 1 for partitions in partition_of_key.values())
    keys = sorted(partition_of_key)
    answer = subprocess.run(java_command("dev.weir.reference.KeyPartitions"), text=True, capture_output=True,
                            check=True, input="".join(f"{PARTITIONS} {key.encode().hex()}\n" for key in keys))
    assert [int(line) for line in answer.stdout.split()] == [partition_of_key[key].pop() for key in keys]
