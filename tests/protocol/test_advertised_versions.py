"""The ApiVersions answer is the table PROTOCOL.md 2.2/2.3 recommends for our four client families."""

from weir.broker import handlers  # noqa: F401
from weir.broker.dispatcher import advertised_versions

EXPECTED = {
    0: (0, 12),   # Produce: min 0 keeps old librdkafka's compression on (KAFKA-18659); v0-2 are refused;
                  # v11 TRANSACTION_ABORTABLE, v12 transaction version 2 (v13 topic ids is not served)
    1: (4, 12),   # Fetch: v13+ switches librdkafka to topic ids
    2: (1, 7),    # ListOffsets
    3: (0, 12),   # Metadata
    8: (2, 9),    # OffsetCommit (v9 is KIP-848's member epoch; v10 topic ids is not served)
    9: (1, 9),    # OffsetFetch (v7 require_stable, v8 batched groups, v9 member id and epoch)
    10: (0, 4),   # FindCoordinator (v4 batched)
    11: (0, 5),   # JoinGroup (v5 static membership; v6+ flexible, not needed by any client)
    12: (0, 3),   # Heartbeat
    13: (0, 3),   # LeaveGroup (v3 batched members, which kafka-python's remove_members needs)
    14: (0, 3),   # SyncGroup
    15: (0, 6),   # DescribeGroups (v6 answers GROUP_ID_NOT_FOUND for unknown groups, KIP-1043)
    16: (0, 5),   # ListGroups (v4 state filter, v5 type filter)
    17: (0, 1),   # SaslHandshake (v0: bare tokens follow, deprecated but served by Kafka 4)
    18: (0, 5),   # ApiVersions (v5: KIP-1242, Kafka 4.4)
    19: (2, 7),   # CreateTopics (v5+ answers partitions, replication factor, configs; v7 topic id)
    20: (1, 4),   # DeleteTopics
    21: (0, 2),   # DeleteRecords
    22: (0, 5),   # InitProducerId: aiokafka sends only v0; v6 is KIP-939's two-phase commit
    23: (2, 4),   # OffsetForLeaderEpoch: librdkafka sends exactly v2
    24: (0, 3),   # AddPartitionsToTxn: v4+ is broker-to-broker
    25: (0, 4),   # AddOffsetsToTxn
    26: (0, 5),   # EndTxn: v5 is transaction version 2
    27: (1, 1),   # WriteTxnMarkers: what admin "abort transaction" tools send
    28: (0, 5),   # TxnOffsetCommit: v5 is transaction version 2
    32: (1, 4),   # DescribeConfigs (v3 documentation and config types)
    33: (0, 2),   # AlterConfigs
    36: (0, 2),   # SaslAuthenticate (v1 session lifetime, v2 flexible)
    37: (0, 3),   # CreatePartitions
    38: (1, 3),   # CreateDelegationToken (v3 owner other than the requester, KIP-373; Kafka 4 removed v0)
    39: (1, 2),   # RenewDelegationToken
    40: (1, 2),   # ExpireDelegationToken
    41: (1, 3),   # DescribeDelegationToken
    42: (0, 3),   # DeleteGroups (v3: a message per group, Kafka 4.4)
    44: (0, 1),   # IncrementalAlterConfigs
    47: (0, 0),   # OffsetDelete
    48: (0, 1),   # DescribeClientQuotas (kafka-configs --describe users/clients, kafka-client-quotas)
    49: (0, 1),   # AlterClientQuotas
    29: (1, 3),   # DescribeAcls (Kafka 4 removed v0)
    30: (1, 3),   # CreateAcls
    31: (1, 3),   # DeleteAcls
    50: (0, 0),   # DescribeUserScramCredentials
    51: (0, 0),   # AlterUserScramCredentials
    57: (0, 2),   # UpdateFeatures (kafka-features upgrade/downgrade; v2 answers no per-feature results)
    60: (0, 2),   # DescribeCluster (v2 fenced brokers: one node is never fenced)
    61: (0, 0),   # DescribeProducers
    65: (0, 0),   # DescribeTransactions
    66: (0, 2),   # ListTransactions (v1 duration filter, v2 transactional id pattern)
    76: (1, 1),   # ShareGroupHeartbeat (KIP-932; v0 was early access, removed in 4.1)
    77: (1, 1),   # ShareGroupDescribe
    78: (1, 2),   # ShareFetch (v2: acquire mode, renew acknowledgements)
    79: (1, 2),   # ShareAcknowledge
    90: (0, 1),   # DescribeShareGroupOffsets (v1 lag)
    91: (0, 0),   # AlterShareGroupOffsets
    92: (0, 0),   # DeleteShareGroupOffsets
    88: (0, 1),   # StreamsGroupHeartbeat (KIP-1071; v1 INT64 recovery lag, topology description flag)
    89: (0, 1),   # StreamsGroupDescribe (v1 topology description, assignor name)
    68: (0, 1),   # ConsumerGroupHeartbeat (KIP-848; v1 regex subscriptions, client-chosen member ids)
    69: (0, 1),   # ConsumerGroupDescribe (v1 member type)
    75: (0, 0),   # DescribeTopicPartitions (KIP-966; kafka-topics --describe)
    35: (1, 5),   # DescribeLogDirs (kafka-log-dirs; v4 disk bytes, v5 cordoned)
    43: (0, 2),   # ElectLeaders (kafka-leader-election)
    45: (0, 1),   # AlterPartitionReassignments (kafka-reassign-partitions)
    46: (0, 0),   # ListPartitionReassignments
    71: (0, 0),   # GetTelemetrySubscriptions (KIP-714; Kafka advertises it only with a receiver plugin)
    72: (0, 0),   # PushTelemetry
    74: (0, 1),   # ListConfigResources (kafka-client-metrics --list; v1 KIP-1142 resource types)
}


def test_advertised_ranges():
    assert {key: (lo, hi) for key, lo, hi in advertised_versions()} == EXPECTED


def test_old_librdkafka_feature_probes_fall_inside_the_ranges():
    ranges = {key: (lo, hi) for key, lo, hi in advertised_versions()}

    def inside(key, version):
        return ranges[key][0] <= version <= ranges[key][1]

    assert inside(0, 3) and inside(1, 4), "MsgVer2"
    assert inside(0, 0), "gzip/snappy/lz4 probe Produce 0..0"
    assert inside(0, 7) and inside(1, 10), "ZSTD"
    assert inside(2, 1), "OffsetTime"
    assert inside(22, 0), "IdempotentProducer"
    assert inside(10, 0), "LZ4 / BrokerGroupCoordinator"
    assert all(inside(key, 0) for key in (10, 11, 12, 13, 14)) and inside(8, 2) and inside(9, 1), \
        "balanced consumer"
