package dev.weir.reference.client;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * KafkaShareConsumers of one share group (explicit acknowledgement), acknowledgement by
 * acknowledgement, on two one-partition topics: "jobs" holding six records, "slow" holding one.
 * Member a subscribes to jobs, takes all six and acknowledges 0-1 ACCEPT, 2 RELEASE, 3 REJECT,
 * 4 RENEW, 5 ACCEPT (commitAsync: the commit callback reports). Member c subscribes to slow and
 * takes its record. Then for {@code holdMs} (past the acquisition lock) a polls, gets record 4
 * back (a renewed record is delivered again to its holder) and renews it again, while b,
 * subscribed to both topics, polls and accepts what it gets: 2 (released) and slow's record
 * (c let its lock expire), not 4. Then a accepts 4 (commitSync: its result), and c accepts the
 * record b took (commitAsync: the callback reports the broker's refusal).
 *
 * <p>Prints "received" (member, topic, offset, delivery count), "callback" (member, offsets per
 * topic-partition, exception class or null) and "commitSync" (member, result per partition) lines.
 * Arguments: bootstrap jobsTopic slowTopic group holdMs
 */
public final class ShareAcknowledgements {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], jobs = args[1], slow = args[2], group = args[3];
        long holdMs = Long.parseLong(args[4]);
        try (var a = member(bootstrap, group, "a"); var b = member(bootstrap, group, "b");
             var c = member(bootstrap, group, "c")) {
            a.subscribe(List.of(jobs));
            int held = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (held < 6 && System.currentTimeMillis() < deadline) {
                for (var record : a.poll(Duration.ofMillis(500))) {
                    held++;
                    received("a", record);
                    a.acknowledge(record, switch ((int) record.offset()) {
                        case 2 -> AcknowledgeType.RELEASE;
                        case 3 -> AcknowledgeType.REJECT;
                        case 4 -> AcknowledgeType.RENEW;
                        default -> AcknowledgeType.ACCEPT;
                    });
                }
            }
            a.commitAsync();
            c.subscribe(List.of(slow));
            ConsumerRecord<String, String> slowRecord = null;
            while (slowRecord == null && System.currentTimeMillis() < deadline) {
                for (var record : c.poll(Duration.ofMillis(500))) {
                    slowRecord = record;
                    received("c", record);
                }
            }
            b.subscribe(List.of(jobs, slow));
            long end = System.currentTimeMillis() + holdMs;
            while (System.currentTimeMillis() < end) {
                for (var record : a.poll(Duration.ofMillis(500))) {
                    received("a", record);
                    a.acknowledge(record, AcknowledgeType.RENEW);
                    a.commitAsync();
                }
                for (var record : b.poll(Duration.ofMillis(500))) {
                    received("b", record);
                    b.acknowledge(record, AcknowledgeType.ACCEPT);
                }
            }
            b.commitSync();
            boolean accepted = false;
            while (!accepted && System.currentTimeMillis() < end + 30_000) {
                for (var record : a.poll(Duration.ofMillis(500))) {
                    a.acknowledge(record, AcknowledgeType.ACCEPT);
                    accepted = true;
                }
            }
            Map<String, Object> result = new TreeMap<>();
            for (Map.Entry<TopicIdPartition, java.util.Optional<KafkaException>> entry : a.commitSync().entrySet()) {
                result.put(entry.getKey().topic() + "-" + entry.getKey().partition(),
                        entry.getValue().map(Out::errorName).orElse(null));
            }
            Out.emit("commitSync", "member", "a", "result", result);
            if (slowRecord != null) {
                c.acknowledge(slowRecord, AcknowledgeType.ACCEPT);
                c.commitAsync();
                c.poll(Duration.ofMillis(1000));  // runs the callback of that commit
            }
            Out.emit("done");
        }
    }

    private static KafkaShareConsumer<String, String> member(String bootstrap, String group, String name) {
        var consumer = new KafkaShareConsumer<>(Out.properties(bootstrap, "group.id", group, "client.id", name,
                "share.acknowledgement.mode", "explicit"), new StringDeserializer(), new StringDeserializer());
        consumer.setAcknowledgementCommitCallback((offsets, exception) -> {
            Map<String, Object> byPartition = new TreeMap<>();
            for (Map.Entry<TopicIdPartition, Set<Long>> entry : offsets.entrySet()) {
                byPartition.put(entry.getKey().topic() + "-" + entry.getKey().partition(),
                        new TreeSet<>(entry.getValue()));
            }
            Out.emit("callback", "member", name, "offsets", byPartition,
                    "exception", exception == null ? null : Out.errorName(exception));
        });
        return consumer;
    }

    private static void received(String member, ConsumerRecord<String, String> record) {
        Out.emit("received", "member", member, "topic", record.topic(), "offset", record.offset(),
                "deliveryCount", record.deliveryCount().map(Short::intValue).orElse(-1), "value", record.value());
    }
}
