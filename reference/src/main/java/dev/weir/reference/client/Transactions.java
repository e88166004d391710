package dev.weir.reference.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactional producer flows, one per mode, each printing what the Java client saw.
 *
 * <ul>
 * <li>{@code commit-abort bootstrap topic txnId}: three transactions on partition 0, the middle one aborted.</li>
 * <li>{@code zombie bootstrap topic txnId}: a second producer with the same transactional.id fences the first,
 *     which is in the middle of a transaction; prints the errors the first then gets.</li>
 * <li>{@code lso bootstrap topic txnId}: a read_committed consumer is held behind an open transaction
 *     (and a plain record written after it) until the transaction commits.</li>
 * <li>{@code timeout bootstrap topic txnId}: transaction.timeout.ms=1000; the broker aborts the open
 *     transaction; prints how commit, abort and the next transaction then fare.</li>
 * </ul>
 */
public final class Transactions {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String bootstrap = args[1];
        String topic = args[2];
        String txnId = args[3];
        switch (mode) {
            case "commit-abort" -> commitAbort(bootstrap, topic, txnId);
            case "zombie" -> zombie(bootstrap, topic, txnId);
            case "lso" -> lso(bootstrap, topic, txnId);
            case "timeout" -> timeout(bootstrap, topic, txnId);
            default -> throw new IllegalArgumentException(mode);
        }
        Out.emit("done");
    }

    static KafkaProducer<String, String> transactional(String bootstrap, String txnId, String... extra) {
        var props = Out.properties(bootstrap, "transactional.id", txnId, "linger.ms", "0");
        for (int i = 0; i + 1 < extra.length; i += 2) props.put(extra[i], extra[i + 1]);
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    static KafkaConsumer<String, String> readCommitted(String bootstrap, String topic) {
        var props = Out.properties(bootstrap, "isolation.level", "read_committed", "enable.auto.commit", "false",
                "auto.offset.reset", "earliest", "fetch.max.wait.ms", "100");
        var consumer = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        consumer.assign(List.of(new TopicPartition(topic, 0)));
        consumer.seekToBeginning(List.of(new TopicPartition(topic, 0)));
        return consumer;
    }

    static long lastStableOffset(Admin admin, TopicPartition partition) throws Exception {
        var options = new org.apache.kafka.clients.admin.ListOffsetsOptions(IsolationLevel.READ_COMMITTED);
        return admin.listOffsets(Map.of(partition, OffsetSpec.latest()), options).partitionResult(partition).get().offset();
    }

    private static void send(KafkaProducer<String, String> producer, String topic, String... values) throws Exception {
        for (String value : values) producer.send(new ProducerRecord<>(topic, 0, null, value)).get();
    }

    static void commitAbort(String bootstrap, String topic, String txnId) throws Exception {
        try (var producer = transactional(bootstrap, txnId)) {
            producer.initTransactions();
            producer.beginTransaction();
            send(producer, topic, "committed-1", "committed-2", "committed-3");
            producer.commitTransaction();
            Out.emit("committed");
            producer.beginTransaction();
            send(producer, topic, "aborted-1", "aborted-2", "aborted-3");
            producer.abortTransaction();
            Out.emit("aborted");
            producer.beginTransaction();
            send(producer, topic, "committed-4", "committed-5");
            producer.commitTransaction();
            Out.emit("committed");
        }
        try (var consumer = readCommitted(bootstrap, topic)) {
            List<String> seen = pollValues(consumer, 5, Duration.ofSeconds(20));
            Out.emit("read_committed", "values", seen, "position", consumer.position(new TopicPartition(topic, 0)));
        }
    }

    private static List<String> pollValues(KafkaConsumer<String, String> consumer, int want, Duration limit) {
        List<String> seen = new ArrayList<>();
        long deadline = System.nanoTime() + limit.toNanos();
        while (seen.size() < want && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) seen.add(record.value());
        }
        return seen;
    }

    static String attempt(Step step) {
        try {
            step.run();
            return "ok";
        } catch (Exception e) {
            return Out.errorName(e);
        }
    }

    interface Step {
        void run() throws Exception;
    }

    static void zombie(String bootstrap, String topic, String txnId) throws Exception {
        var first = transactional(bootstrap, txnId);
        first.initTransactions();
        first.beginTransaction();
        send(first, topic, "zombie-1");
        Out.emit("first_open");
        try (var second = transactional(bootstrap, txnId)) {
            second.initTransactions();  // bumps the epoch and aborts the first producer's open transaction
            Out.emit("second_initialised");
            String sendError = attempt(() -> first.send(new ProducerRecord<>(topic, 0, null, "zombie-2")).get());
            String commitError = attempt(first::commitTransaction);
            Out.emit("first_fenced", "send", sendError, "commit", commitError);
            second.beginTransaction();
            send(second, topic, "successor-1");
            second.commitTransaction();
            Out.emit("second_committed");
        } finally {
            first.close(Duration.ZERO);
        }
        try (var consumer = readCommitted(bootstrap, topic)) {
            Out.emit("read_committed", "values", pollValues(consumer, 1, Duration.ofSeconds(20)));
        }
    }

    static void lso(String bootstrap, String topic, String txnId) throws Exception {
        var partition = new TopicPartition(topic, 0);
        try (var producer = transactional(bootstrap, txnId);
             var plain = new KafkaProducer<>(Out.properties(bootstrap), new StringSerializer(), new StringSerializer());
             var admin = Admin.create(Out.properties(bootstrap));
             var consumer = readCommitted(bootstrap, topic)) {
            producer.initTransactions();
            producer.beginTransaction();
            send(producer, topic, "open-1");
            plain.send(new ProducerRecord<>(topic, 0, null, "plain-after-open")).get();
            long endOffset = admin.listOffsets(Map.of(partition, OffsetSpec.latest())).partitionResult(partition).get().offset();
            // The consumer polls for a second: long enough for several fetches (fetch.max.wait.ms=100);
            // what is asserted is that it gets nothing and stays at the transaction's first offset.
            List<String> held = new ArrayList<>();
            long until = System.nanoTime() + Duration.ofSeconds(1).toNanos();
            while (System.nanoTime() < until) {
                for (var record : consumer.poll(Duration.ofMillis(100))) held.add(record.value());
            }
            Out.emit("held", "values", held, "position", consumer.position(partition),
                    "last_stable_offset", lastStableOffset(admin, partition), "end_offset", endOffset);
            producer.commitTransaction();
            List<String> released = pollValues(consumer, 2, Duration.ofSeconds(20));
            Out.emit("released", "values", released, "last_stable_offset", lastStableOffset(admin, partition));
        }
    }

    static void timeout(String bootstrap, String topic, String txnId) throws Exception {
        var partition = new TopicPartition(topic, 0);
        try (var producer = transactional(bootstrap, txnId, "transaction.timeout.ms", "1000");
             var admin = Admin.create(Out.properties(bootstrap))) {
            producer.initTransactions();
            producer.beginTransaction();
            send(producer, topic, "timed-out-1");
            Out.emit("open", "last_stable_offset", lastStableOffset(admin, partition));
            // The broker aborts the transaction once it is older than its timeout: the LSO then
            // moves past the abort marker. Poll for that with a deadline.
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            long stable = lastStableOffset(admin, partition);
            while (stable == 0 && System.nanoTime() < deadline) {
                Thread.sleep(100);
                stable = lastStableOffset(admin, partition);
            }
            Out.emit("aborted_by_broker", "last_stable_offset", stable);
            String sendError = attempt(() -> producer.send(new ProducerRecord<>(topic, 0, null, "late-1")).get());
            String commitError = attempt(producer::commitTransaction);
            String abortError = attempt(producer::abortTransaction);
            String nextError = attempt(() -> {
                producer.beginTransaction();
                producer.send(new ProducerRecord<>(topic, 0, null, "next-1")).get();
                producer.commitTransaction();
            });
            Out.emit("after_timeout", "send", sendError, "commit", commitError, "abort", abortError, "next", nextError);
        }
    }
}
