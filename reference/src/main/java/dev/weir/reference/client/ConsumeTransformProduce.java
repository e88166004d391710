package dev.weir.reference.client;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The exactly-once loop: a read_committed consumer (subscribe(), cooperative-sticky) feeds a
 * transactional producer that writes "out-" + value and commits the consumed offsets with
 * sendOffsetsToTransaction(offsets, consumer.groupMetadata()). The first batch's transaction is
 * aborted on purpose (consumer rewound to where it was), the rest commit, until COUNT input
 * records are processed; then offsets sent with a zombie's group metadata (a newer and an older
 * generation) are refused. Prints the group's committed offsets after the abort and at the end.
 *
 * <p>With a seventh argument "consumer" the consumer speaks the consumer group protocol (KIP-848):
 * groupMetadata() then carries the member epoch, which the broker checks on TxnOffsetCommit.
 *
 * <p>Arguments: bootstrap inputTopic outputTopic group txnId count [classic|consumer]
 */
public final class ConsumeTransformProduce {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], group = args[3], txnId = args[4];
        int count = Integer.parseInt(args[5]);
        var consumerProps = Out.properties(bootstrap, "group.id", group, "isolation.level", "read_committed",
                "enable.auto.commit", "false", "auto.offset.reset", "earliest", "max.poll.records", "7");
        if (args.length > 6 && args[6].equals("consumer")) {
            consumerProps.put("group.protocol", "consumer");
        } else {
            consumerProps.put("partition.assignment.strategy",
                    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        }
        try (var consumer = new KafkaConsumer<>(consumerProps, new StringDeserializer(), new StringDeserializer());
             var producer = Transactions.transactional(bootstrap, txnId);
             var admin = Admin.create(Out.properties(bootstrap))) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            int processed = 0;
            boolean abortedOnce = false;
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (processed < count && System.nanoTime() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                Map<TopicPartition, Long> firstOffsets = new HashMap<>();
                for (ConsumerRecord<String, String> record : records) {
                    var partition = new TopicPartition(record.topic(), record.partition());
                    producer.send(new ProducerRecord<>(output, record.key(), "out-" + record.value()));
                    offsets.put(partition, new OffsetAndMetadata(record.offset() + 1));
                    firstOffsets.putIfAbsent(partition, record.offset());
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                if (!abortedOnce) {
                    producer.flush();  // written, then aborted: abortTransaction drops batches not yet sent
                    producer.abortTransaction();
                    abortedOnce = true;
                    firstOffsets.forEach(consumer::seek);
                    Out.emit("aborted", "records", records.count(),
                            "committed", committed(admin, group));
                    continue;
                }
                producer.commitTransaction();
                processed += records.count();
                Out.emit("committed", "records", records.count(), "generation", consumer.groupMetadata().generationId());
            }
            zombieOffsets(producer, consumer);
            Out.emit("processed", "records", processed);
            Out.emit("group_offsets", "committed", committed(admin, group));
        }
        Out.emit("done");
    }

    /**
     * KIP-447 fencing: offsets sent with the consumer's group metadata but a newer and an older
     * generation (member epoch, with the consumer protocol) than the member's, as a zombie's would be.
     * Each transaction is aborted after its error; prints the exception each sendOffsetsToTransaction
     * (or, if it passed, commitTransaction) threw, "none" if neither did.
     */
    static void zombieOffsets(org.apache.kafka.clients.producer.KafkaProducer<String, String> producer,
                              KafkaConsumer<String, String> consumer) {
        ConsumerGroupMetadata current = consumer.groupMetadata();
        Map<String, Object> outcome = new TreeMap<>();
        for (int shift : new int[] {1, -1}) {
            var zombie = new ConsumerGroupMetadata(current.groupId(), current.generationId() + shift,
                    current.memberId(), current.groupInstanceId());
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            consumer.assignment().forEach(partition -> offsets.put(partition, new OffsetAndMetadata(0)));
            String error = "none";
            producer.beginTransaction();
            try {
                producer.sendOffsetsToTransaction(offsets, zombie);
                producer.commitTransaction();
            } catch (Exception exception) {
                error = exception.getClass().getSimpleName();
                producer.abortTransaction();
            }
            outcome.put(shift > 0 ? "newer" : "older", error);
        }
        Out.emit("zombie_offsets", "errors", outcome);
    }

    /** The group's committed offsets as "partition" -> offset, read with the Admin API. */
    static Map<String, Long> committed(Admin admin, String group) throws Exception {
        Map<String, Long> result = new TreeMap<>();
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .forEach((partition, offset) -> {
                    if (offset != null) result.put(String.valueOf(partition.partition()), offset.offset());
                });
        return result;
    }
}
