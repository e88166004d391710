"""More of the ACL scenario (acl_scenario.py): bob's transaction, offset and admin calls on
the resources the scenario's ACLs allow or refuse him."""

from __future__ import annotations

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import alter_partition_reassignments, describe_log_dirs, elect_leaders
from weir.protocol.messages import list_partition_reassignments
from weir.protocol.messages import (add_offsets_to_txn, add_partitions_to_txn, create_partitions, delete_groups,
                                    delete_records, describe_producers, describe_topic_partitions,
                                    describe_transactions, end_txn,
                                    incremental_alter_configs, list_groups, list_transactions, offset_commit,
                                    produce)
from weir.protocol.records import Record, encode_batch


def run(bob, seen: dict, settled) -> None:
    """Adds bob's answers to ``seen``; ``settled(call)`` retries while Kafka's coordinators load."""
    producers = bob.call(ApiKey.DESCRIBE_PRODUCERS, 0, describe_producers.REQUEST(topics=[
        describe_producers.TopicRequest(name=t, partition_indexes=[0]) for t in ("acl-read", "acl-pre-a")]))
    seen["describe_producers"] = [(t.name, t.partitions[0].error_code, t.partitions[0].error_message)
                                  for t in producers.topics]
    listed = bob.call(ApiKey.LIST_GROUPS, 4, list_groups.REQUEST())
    seen["list_groups"] = (listed.error_code, sorted(g.group_id for g in listed.groups))
    committed = settled(lambda: bob.call(ApiKey.OFFSET_COMMIT, 8, offset_commit.REQUEST(
        group_id="g-ok", generation_id_or_member_epoch=-1, member_id="", topics=[
            offset_commit.RequestTopic(name=t, partitions=[offset_commit.RequestPartition(
                partition_index=0, committed_offset=0, committed_metadata="")]) for t in ("acl-read", "acl-pre-a")])))
    seen["offset_commit"] = sorted((t.name, t.partitions[0].error_code) for t in committed.topics)
    seen["add_offsets_to_txn"] = [bob.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, add_offsets_to_txn.REQUEST(
        transactional_id=txn, producer_id=1, producer_epoch=0, group_id=group)).error_code
        for txn, group in (("tx-no", "g-ok"), ("tx-ok", "g-no"))]
    seen["end_txn"] = bob.call(ApiKey.END_TXN, 3, end_txn.REQUEST(transactional_id="tx-no", producer_id=1,
                                                                  producer_epoch=0, committed=True)).error_code
    added = bob.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, add_partitions_to_txn.REQUEST(
        v3_and_below_transactional_id="tx-ok", v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[add_partitions_to_txn.Topic(name=t, partitions=[0]) for t in ("acl-read", "acl-pre-a")]))
    seen["add_partitions_to_txn"] = sorted((t.name, t.results_by_partition[0].partition_error_code)
                                           for t in added.results_by_topic_v3_and_below)
    described = bob.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, describe_transactions.REQUEST(transactional_ids=["tx-no"]))
    seen["describe_transactions"] = [s.error_code for s in described.transaction_states]
    seen["list_transactions"] = bob.call(ApiKey.LIST_TRANSACTIONS, 0, list_transactions.REQUEST()).transaction_states
    partitions = bob.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, describe_topic_partitions.REQUEST(topics=[]))
    # topics bob created just before are left out: Kafka's broker learns of them a moment later
    seen["describe_topic_partitions_all"] = sorted(t.name for t in partitions.topics
                                                   if t.name not in ("acl-pre-auto", "acl-pre-new"))
    partitions = bob.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, describe_topic_partitions.REQUEST(topics=[
        describe_topic_partitions.TopicRequest(name=t) for t in ("acl-read", "acl-hidden")]))
    seen["describe_topic_partitions"] = sorted((t.name, t.error_code, t.topic_authorized_operations)
                                               for t in partitions.topics)
    records = bob.call(ApiKey.DELETE_RECORDS, 2, delete_records.REQUEST(timeout_ms=5000, topics=[
        delete_records.RequestTopic(name="acl-read", partitions=[delete_records.RequestPartition(
            partition_index=0, offset=0)])]))
    seen["delete_records"] = records.topics[0].partitions[0].error_code
    grown = bob.call(ApiKey.CREATE_PARTITIONS, 3, create_partitions.REQUEST(timeout_ms=5000, validate_only=True,
                                                                             topics=[create_partitions.Topic(
                                                                                 name="acl-read", count=2)]))
    seen["create_partitions"] = [(r.name, r.error_code, r.error_message) for r in grown.results]
    altered = bob.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental_alter_configs.REQUEST(resources=[
        incremental_alter_configs.Resource(resource_type=2, resource_name="acl-read", configs=[
            incremental_alter_configs.AlterableConfig(name="retention.ms", config_operation=0, value="1000")])]))
    seen["incremental_alter_configs"] = [(r.error_code, r.error_message) for r in altered.responses]
    batch = encode_batch([Record(b"t")], producer_id=1, producer_epoch=0, base_sequence=0, transactional=True)
    answer = bob.call(ApiKey.PRODUCE, 9, produce.REQUEST(
        transactional_id="tx-no", acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
            name="acl-pre-a", partition_data=[produce.PartitionData(index=0, records=batch)])]))
    seen["transactional_produce_denied"] = answer.responses[0].partition_responses[0].error_code
    deleted = settled(lambda: bob.call(ApiKey.DELETE_GROUPS, 2, delete_groups.REQUEST(groups_names=["g-ok"])))
    seen["delete_groups"] = [(r.group_id, r.error_code) for r in deleted.results]
    ops_apis(bob, seen)


def ops_apis(bob, seen: dict) -> None:
    """The log-directory and leadership APIs need DESCRIBE (log dirs, listing reassignments) or ALTER
    (elections, reassignments) on the cluster, which bob lacks. Codes only: Kafka's refusal message
    prints its forwarded request object."""
    dirs = bob.call(ApiKey.DESCRIBE_LOG_DIRS, 4, describe_log_dirs.REQUEST(topics=None))
    seen["describe_log_dirs"] = (dirs.error_code, dirs.results)
    elected = bob.call(ApiKey.ELECT_LEADERS, 2, elect_leaders.REQUEST(election_type=0, topic_partitions=[
        elect_leaders.TopicPartitions(topic="acl-read", partitions=[0])]))
    seen["elect_leaders"] = (elected.error_code, [[p.error_code for p in r.partition_result]
                                                  for r in elected.replica_election_results])
    moved = bob.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, alter_partition_reassignments.REQUEST(topics=[
        alter_partition_reassignments.ReassignableTopic(name="acl-read", partitions=[
            alter_partition_reassignments.ReassignablePartition(partition_index=0, replicas=[1])])]))
    seen["alter_partition_reassignments"] = (moved.error_code, [[p.error_code for p in t.partitions]
                                                                for t in moved.responses])
    listed = bob.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, list_partition_reassignments.REQUEST(topics=[
        list_partition_reassignments.Topics(name="acl-read", partition_indexes=[0])]))
    seen["list_partition_reassignments"] = (listed.error_code, [(t.name, [p.partition_index for p in t.partitions])
                                                                for t in listed.topics])
