package dev.weir.reference.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Every Admin API the Java client has for topics, configs, groups and transactions, run once
 * in order against a broker; each step prints one line with what the Java client saw, with
 * what differs between any two clusters (cluster ids, topic ids, producer ids, hosts,
 * timestamps) replaced by what can be compared. A step that fails prints the exception's class.
 *
 * <p>Arguments: bootstrap prefix (unique topic/group/transactional-id prefix)
 */
public final class AdminScenario {
    interface Step {
        Object run() throws Exception;
    }

    private static final long STARTED = System.nanoTime();

    /** Runs one step; its line also says when it ended ("ms" since the start), for finding slow steps. */
    static void step(String name, Step step) {
        try {
            Object result = step.run();
            Out.emit(name, "result", result, "ms", (System.nanoTime() - STARTED) / 1_000_000);
        } catch (Exception e) {
            if (e instanceof RuntimeException) e.printStackTrace();  // a bug of this program, not an answer
            Out.emit(name, "error", Out.errorName(e), "ms", (System.nanoTime() - STARTED) / 1_000_000);
        }
    }

    static final List<String> TOPIC_KEYS = List.of("retention.ms", "cleanup.policy", "segment.bytes",
            "min.insync.replicas", "max.message.bytes", "message.timestamp.type", "compression.type",
            "retention.bytes", "unclean.leader.election.enable");
    static final List<String> BROKER_KEYS = List.of("num.partitions", "log.retention.hours", "log.retention.ms",
            "message.max.bytes", "offsets.topic.num.partitions", "transaction.state.log.num.partitions",
            "group.initial.rebalance.delay.ms", "auto.create.topics.enable", "log.index.interval.bytes",
            "transaction.max.timeout.ms", "node.id");

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        String topicA = prefix + "-a", topicB = prefix + "-b", group = prefix + "-group", txnId = prefix + "-txn";
        try (Admin admin = Admin.create(Out.properties(bootstrap))) {
            cluster(admin);
            topics(admin, topicA, topicB);
            configs(admin, topicA);
            groups(admin, bootstrap, topicB, group);
            transactions(admin, bootstrap, topicB, txnId);
            partitionsAndRecords(admin, bootstrap, topicA);
            deletion(admin, prefix, topicA, topicB);
        }
        Out.emit("done");
    }

    static void cluster(Admin admin) {
        step("describe_cluster", () -> {
            var cluster = admin.describeCluster();
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("nodes", cluster.nodes().get().stream().map(Node::id).sorted().toList());
            result.put("controller", cluster.controller().get().id());
            result.put("has_cluster_id", !cluster.clusterId().get().isEmpty());
            result.put("authorized_operations", cluster.authorizedOperations().get());
            return result;
        });
    }

    static void topics(Admin admin, String topicA, String topicB) {
        step("create_topics", () -> {
            CreateTopicsResult created = admin.createTopics(List.of(
                    new NewTopic(topicA, 3, (short) 1).configs(Map.of("retention.ms", "3600000")),
                    new NewTopic(topicB, Optional.of(1), Optional.empty())));
            created.all().get();
            Map<String, Object> result = new TreeMap<>();
            for (String topic : List.of(topicA, topicB)) {
                Config config = created.config(topic).get();
                Map<String, Object> answer = new LinkedHashMap<>();
                answer.put("partitions", created.numPartitions(topic).get());
                answer.put("replication_factor", created.replicationFactor(topic).get());
                answer.put("retention.ms", entry(config.get("retention.ms")));
                answer.put("has_topic_id", !created.topicId(topic).get().equals(Uuid.ZERO_UUID));
                result.put(topic.substring(topic.length() - 1), answer);
            }
            return result;
        });
        step("create_existing_topic", () -> admin.createTopics(List.of(new NewTopic(topicA, 1, (short) 1))).all().get());
        step("create_replication_factor_3", () ->
                admin.createTopics(List.of(new NewTopic(topicA + "-rf", 1, (short) 3))).all().get());
        step("create_invalid_name", () -> admin.createTopics(List.of(new NewTopic("bad/name", 1, (short) 1))).all().get());
        step("create_bad_config", () -> admin.createTopics(List.of(
                new NewTopic(topicA + "-bad", 1, (short) 1).configs(Map.of("retention.ms", "soon")))).all().get());
        step("list_topics", () -> ours(admin.listTopics().names().get(), topicA, topicB));
        step("list_topics_internal", () -> admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get()
                .stream().filter(name -> name.startsWith("__")).sorted().toList());
        step("describe_topics", () -> describeTopics(admin, List.of(topicA, topicB)));
        step("describe_unknown_topic", () -> describeTopics(admin, List.of(topicA + "-none")));
    }

    static List<String> ours(Collection<String> names, String... wanted) {
        return names.stream().filter(List.of(wanted)::contains).sorted().toList();
    }

    static Map<String, Object> describeTopics(Admin admin, List<String> topics) throws Exception {
        Map<String, Object> result = new TreeMap<>();
        for (TopicDescription description : admin.describeTopics(topics).allTopicNames().get().values()) {
            List<Object> partitions = new ArrayList<>();
            for (TopicPartitionInfo info : description.partitions()) {
                partitions.add(Map.of("partition", info.partition(), "leader", info.leader().id(),
                        "replicas", info.replicas().stream().map(Node::id).toList(),
                        "isr", info.isr().stream().map(Node::id).toList()));
            }
            result.put(description.name().substring(description.name().length() - 1), Map.of(
                    "internal", description.isInternal(), "partitions", partitions,
                    "has_topic_id", !description.topicId().equals(Uuid.ZERO_UUID)));
        }
        return result;
    }

    static Map<String, Object> entry(ConfigEntry entry) {
        if (entry == null) return null;
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("value", entry.value());
        result.put("source", entry.source().name());
        result.put("read_only", entry.isReadOnly());
        result.put("sensitive", entry.isSensitive());
        result.put("type", String.valueOf(entry.type()));  // null where CreateTopics answered the entry
        return result;
    }

    static Map<String, Object> described(Admin admin, ConfigResource resource, List<String> keys) throws Exception {
        Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
        Map<String, Object> result = new LinkedHashMap<>();
        for (String key : keys) result.put(key, entry(config.get(key)));
        return result;
    }

    static Map<String, Object> describedOnce(Admin admin, ConfigResource resource, String key, String value)
            throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        Map<String, Object> answer = described(admin, resource, List.of(key));
        while (!value.equals(((Map<?, ?>) answer.get(key)).get("value")) && System.nanoTime() < deadline) {
            Thread.sleep(50);
            answer = described(admin, resource, List.of(key));
        }
        return answer;
    }

    static void configs(Admin admin, String topic) {
        var resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        var broker = new ConfigResource(ConfigResource.Type.BROKER, "1");
        step("describe_topic_config", () -> described(admin, resource, TOPIC_KEYS));
        step("topic_config_names", () -> admin.describeConfigs(List.of(resource)).all().get().get(resource)
                .entries().stream().map(ConfigEntry::name).sorted().toList());
        step("alter_topic_config", () -> {
            admin.incrementalAlterConfigs(Map.of(resource, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND),
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", ""), AlterConfigOp.OpType.DELETE)))).all().get();
            return described(admin, resource, List.of("retention.ms", "cleanup.policy", "max.message.bytes"));
        });
        step("alter_topic_config_back", () -> {
            admin.incrementalAlterConfigs(Map.of(resource, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SUBTRACT)))).all().get();
            return described(admin, resource, List.of("retention.ms", "cleanup.policy"));
        });
        step("alter_topic_config_invalid_value", () -> admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)))).all().get());
        step("alter_topic_config_unknown_name", () -> admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all().get());
        step("alter_unknown_topic_config", () -> admin.incrementalAlterConfigs(Map.of(
                new ConfigResource(ConfigResource.Type.TOPIC, topic + "-none"), List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "1"), AlterConfigOp.OpType.SET)))).all().get());
        step("describe_broker_config", () -> described(admin, broker, BROKER_KEYS));
        // Kafka applies a broker setting once its ConfigRecord reaches the broker's metadata
        // cache, a moment after the answer: describe until the value shows (deadline 10 s).
        step("alter_broker_config", () -> {
            admin.incrementalAlterConfigs(Map.of(broker, List.of(new AlterConfigOp(
                    new ConfigEntry("log.index.interval.bytes", "8192"), AlterConfigOp.OpType.SET)))).all().get();
            return describedOnce(admin, broker, "log.index.interval.bytes", "8192");
        });
        step("alter_broker_config_back", () -> {
            admin.incrementalAlterConfigs(Map.of(broker, List.of(new AlterConfigOp(
                    new ConfigEntry("log.index.interval.bytes", ""), AlterConfigOp.OpType.DELETE)))).all().get();
            return describedOnce(admin, broker, "log.index.interval.bytes", "4096");
        });
        step("alter_broker_config_static_only", () -> admin.incrementalAlterConfigs(Map.of(broker, List.of(
                new AlterConfigOp(new ConfigEntry("node.id", "7"), AlterConfigOp.OpType.SET)))).all().get());
    }

    static void groups(Admin admin, String bootstrap, String topic, String group) throws Exception {
        try (var producer = new KafkaProducer<>(Out.properties(bootstrap), new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 3; i++) producer.send(new ProducerRecord<>(topic, 0, null, "g" + i)).get();
        }
        var partition = new TopicPartition(topic, 0);
        var props = Out.properties(bootstrap, "group.id", group, "client.id", "admin-scenario-member",
                "enable.auto.commit", "false", "auto.offset.reset", "earliest");
        try (var consumer = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            int seen = 0;
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (seen < 3 && System.nanoTime() < deadline) seen += consumer.poll(Duration.ofMillis(200)).count();
            consumer.commitSync();
            step("describe_active_group", () -> describeGroup(admin, group));
            step("alter_offsets_of_active_group", () -> admin.alterConsumerGroupOffsets(group,
                    Map.of(partition, new OffsetAndMetadata(1))).all().get());
            step("delete_active_group", () -> admin.deleteConsumerGroups(List.of(group)).all().get());
        }
        step("list_groups", () -> admin.listConsumerGroups().all().get().stream()
                .filter(listing -> listing.groupId().equals(group))
                .map(listing -> Map.of("group", "ours", "simple", listing.isSimpleConsumerGroup(),
                        "state", String.valueOf(listing.groupState().orElse(null)),
                        "type", String.valueOf(listing.type().orElse(null))))
                .toList());
        step("describe_empty_group", () -> describeGroup(admin, group));
        step("list_group_offsets", () -> offsets(admin, group));
        step("alter_group_offsets", () -> {
            admin.alterConsumerGroupOffsets(group, Map.of(partition, new OffsetAndMetadata(1, "moved"))).all().get();
            return offsets(admin, group);
        });
        step("alter_offsets_unknown_partition", () -> admin.alterConsumerGroupOffsets(group,
                Map.of(new TopicPartition(topic, 9), new OffsetAndMetadata(1))).all().get());
        step("delete_group", () -> admin.deleteConsumerGroups(List.of(group)).all().get());
        step("describe_deleted_group", () -> describeGroup(admin, group));
        step("list_deleted_group_offsets", () -> offsets(admin, group));
        step("delete_unknown_group", () -> admin.deleteConsumerGroups(List.of(group + "-none")).all().get());
    }

    static Map<String, Object> describeGroup(Admin admin, String group) throws Exception {
        ConsumerGroupDescription description = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("simple", description.isSimpleConsumerGroup());
        result.put("state", String.valueOf(description.groupState()));
        result.put("type", String.valueOf(description.type()));
        result.put("assignor", description.partitionAssignor());
        result.put("coordinator", description.coordinator() == null ? null : description.coordinator().id());
        result.put("members", description.members().stream().map(member -> Map.of(
                "client_id", member.clientId(),
                "host", member.host().isEmpty() ? "" : "set",
                "has_member_id", !member.consumerId().isEmpty(),
                "group_instance_id", String.valueOf(member.groupInstanceId().orElse(null)),
                "assignment", member.assignment().topicPartitions().stream()
                        .map(TopicPartition::partition).sorted().toList())).toList());
        return result;
    }

    static Map<String, Object> offsets(Admin admin, String group) throws Exception {
        Map<String, Object> result = new TreeMap<>();
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().forEach((partition, offset) ->
                result.put(String.valueOf(partition.partition()), offset == null ? null
                        : Map.of("offset", offset.offset(), "metadata", offset.metadata())));
        return result;
    }

    static void transactions(Admin admin, String bootstrap, String topic, String txnId) throws Exception {
        var partition = new TopicPartition(topic, 0);
        // The "hanging" transaction: written, never ended (a long timeout keeps the coordinator
        // from aborting it), so only an operator's abortTransaction lets read_committed past it.
        var producer = Transactions.transactional(bootstrap, txnId, "transaction.timeout.ms", "600000");
        try {
            producer.initTransactions();
            producer.beginTransaction();
            long first = producer.send(new ProducerRecord<>(topic, 0, null, "hanging")).get().offset();
            Map<String, Object> ids = new LinkedHashMap<>();
            step("list_transactions", () -> admin.listTransactions().all().get().stream()
                    .filter(listing -> listing.transactionalId().equals(txnId))
                    .map(listing -> {
                        ids.put("producer", listing.producerId());
                        return Map.of("state", listing.state().toString());
                    }).toList());
            step("list_transactions_in_another_state", () -> admin.listTransactions(
                    new org.apache.kafka.clients.admin.ListTransactionsOptions().filterStates(
                            List.of(org.apache.kafka.clients.admin.TransactionState.COMPLETE_COMMIT)))
                    .all().get().stream().map(TransactionListing::transactionalId).filter(txnId::equals).toList());
            step("describe_transactions", () -> {
                TransactionDescription description = admin.describeTransactions(List.of(txnId)).all().get().get(txnId);
                Map<String, Object> result = new LinkedHashMap<>();
                result.put("state", description.state().toString());
                result.put("coordinator", description.coordinatorId());
                result.put("same_producer", description.producerId() == (long) ids.get("producer"));
                result.put("epoch", description.producerEpoch());
                result.put("timeout_ms", description.transactionTimeoutMs());
                result.put("has_start_time", description.transactionStartTimeMs().isPresent());
                result.put("partitions", description.topicPartitions().stream().map(TopicPartition::partition).toList());
                return result;
            });
            step("describe_unknown_transaction", () -> admin.describeTransactions(List.of(txnId + "-none")).all().get());
            List<ProducerState> producers = admin.describeProducers(List.of(partition)).partitionResult(partition).get()
                    .activeProducers();
            step("describe_producers", () -> producerStates(producers, ids, first));
            step("stable_offset_before_abort", () -> stableOffset(admin, partition));
            step("abort_transaction", () -> {
                ProducerState state = producers.stream().filter(p -> p.currentTransactionStartOffset().isPresent())
                        .findFirst().orElseThrow();
                admin.abortTransaction(new AbortTransactionSpec(partition, state.producerId(), (short) state.producerEpoch(),
                        state.coordinatorEpoch().orElse(-1))).all().get();
                return "aborted";
            });
            step("stable_offset_after_abort", () -> stableOffset(admin, partition));
            step("describe_producers_after_abort", () -> producerStates(
                    admin.describeProducers(List.of(partition)).partitionResult(partition).get().activeProducers(), ids, first));
        } finally {
            producer.close(Duration.ZERO);
        }
    }

    /** In producer id order: a broker lists a partition's producers in no particular order (Kafka's
     *  come from a hash map), and ids are handed out in increasing order on both brokers. */
    static List<Object> producerStates(List<ProducerState> producers, Map<String, Object> ids, long first) {
        return producers.stream().sorted(java.util.Comparator.comparingLong(ProducerState::producerId)).map(state -> {
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("same_producer", ids.get("producer") != null && state.producerId() == (long) ids.get("producer"));
            result.put("epoch", state.producerEpoch());
            result.put("last_sequence", state.lastSequence());
            result.put("has_last_timestamp", state.lastTimestamp() > 0);
            result.put("coordinator_epoch", state.coordinatorEpoch().isPresent());
            result.put("transaction_start", state.currentTransactionStartOffset().isPresent()
                    ? state.currentTransactionStartOffset().getAsLong() - first : null);
            return (Object) result;
        }).toList();
    }

    static long stableOffset(Admin admin, TopicPartition partition) throws Exception {
        return admin.listOffsets(Map.of(partition, OffsetSpec.latest()), new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
                .partitionResult(partition).get().offset();
    }

    static void partitionsAndRecords(Admin admin, String bootstrap, String topic) throws Exception {
        step("create_partitions", () -> {
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all().get();
            return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
        });
        step("create_partitions_fewer", () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all().get());
        step("create_partitions_same", () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all().get());
        step("create_partitions_unknown_topic", () ->
                admin.createPartitions(Map.of(topic + "-none", NewPartitions.increaseTo(5))).all().get());
        var partition = new TopicPartition(topic, 0);
        try (var producer = new KafkaProducer<>(Out.properties(bootstrap), new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(topic, 0, null, "r" + i)).get();
        }
        step("delete_records", () -> admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(4)))
                .lowWatermarks().get(partition).get().lowWatermark());
        step("earliest_after_delete", () -> admin.listOffsets(Map.of(partition, OffsetSpec.earliest()))
                .partitionResult(partition).get().offset());
        step("delete_records_beyond_end", () -> admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(11)))
                .lowWatermarks().get(partition).get().lowWatermark());
        step("delete_records_to_end", () -> admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(-1)))
                .lowWatermarks().get(partition).get().lowWatermark());
    }

    static void deletion(Admin admin, String prefix, String topicA, String topicB) {
        step("delete_topics", () -> {
            admin.deleteTopics(List.of(topicA, topicB)).all().get();
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            List<String> left = ours(admin.listTopics().names().get(), topicA, topicB);
            while (!left.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(100);
                left = ours(admin.listTopics().names().get(), topicA, topicB);
            }
            return left;
        });
        step("delete_unknown_topic", () -> admin.deleteTopics(List.of(prefix + "-none")).all().get());
        step("describe_deleted_topic", () -> describeTopics(admin, List.of(topicA)));
    }
}
