package dev.weir.reference.client;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of a read_committed, cooperative-sticky consumer group. Prints "assigned",
 * "revoked" and "lost" lines (partitions, generation, System.nanoTime(), which every process on
 * the machine reads from the same monotonic clock) and one "record" line per record; offsets
 * are committed synchronously after each poll and before a partition is given up, so no record
 * is handed to two members. Runs until a line "stop" arrives on stdin, then closes.
 *
 * <p>With a fifth argument "consumer" the member speaks the consumer group protocol (KIP-848,
 * group.protocol=consumer): the broker assigns (uniform), revocations are incremental, and the
 * generation printed is the member epoch. That protocol takes no client-side assignor nor
 * heartbeat interval (the broker sets both), so those settings are left out.
 *
 * <p>Arguments: bootstrap topic group memberName [classic|consumer]
 */
public final class GroupMember {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], member = args[3];
        boolean consumerProtocol = args.length > 4 && args[4].equals("consumer");
        var props = Out.properties(bootstrap, "group.id", group, "isolation.level", "read_committed",
                "enable.auto.commit", "false", "auto.offset.reset", "earliest", "client.id", member,
                "fetch.max.wait.ms", "100");
        if (consumerProtocol) {
            props.put("group.protocol", "consumer");
        } else {
            props.put("heartbeat.interval.ms", "300");
            props.put("partition.assignment.strategy", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        }
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (var in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in))) {
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.trim().equals("stop")) break;
                }
            } catch (java.io.IOException ignored) {
                // stdin closed: stop as well
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        try (var consumer = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    if (!partitions.isEmpty()) consumer.commitSync();
                    report("revoked", partitions);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    report("assigned", partitions);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    report("lost", partitions);
                }

                private void report(String event, Collection<TopicPartition> partitions) {
                    Out.emit(event, "member", member, "partitions",
                            partitions.stream().map(TopicPartition::partition).sorted().toList(),
                            "generation", consumer.groupMetadata().generationId(), "t", System.nanoTime());
                }
            });
            Out.emit("started", "member", member);
            while (!stop.get()) {
                var records = consumer.poll(Duration.ofMillis(100));
                for (var record : records) {
                    Out.emit("record", "member", member, "partition", record.partition(), "offset", record.offset(),
                            "value", record.value(), "t", System.nanoTime());
                }
                if (!records.isEmpty()) commitUnlessRebalancing(consumer);
            }
        }
        Out.emit("closed", "member", member, "t", System.nanoTime());
    }

    /**
     * A commit while the group completes a rebalance is answered REBALANCE_IN_PROGRESS (Kafka's
     * classic group does so between JoinGroup and SyncGroup). As Kafka's documentation advises, the
     * member polls on: the partitions stay its own, and their positions are committed by the next
     * commit or, if they are taken away, by onPartitionsRevoked, so no record reaches two members.
     */
    private static void commitUnlessRebalancing(KafkaConsumer<String, String> consumer) {
        try {
            consumer.commitSync();
        } catch (RebalanceInProgressException e) {
            Out.emit("commit-deferred", "reason", e.getClass().getSimpleName());
        }
    }
}
