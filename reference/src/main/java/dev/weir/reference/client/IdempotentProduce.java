package dev.weir.reference.client;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * An idempotent producer (enable.idempotence=true, acks=all, five requests in flight) sending
 * COUNT keyed records "key-i" = "value-i"; prints one "sent" line per record, in send order,
 * with the partition and offset the broker gave it.
 *
 * <p>Arguments: bootstrap topic count
 */
public final class IdempotentProduce {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        var props = Out.properties(bootstrap, "enable.idempotence", "true", "acks", "all",
                "max.in.flight.requests.per.connection", "5", "linger.ms", "5", "batch.size", "2048");
        try (var producer = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "key-" + (i % 37), "value-" + i)));
            }
            producer.flush();
            for (int i = 0; i < count; i++) {
                RecordMetadata metadata = sent.get(i).get();
                Out.emit("sent", "key", "key-" + (i % 37), "value", "value-" + i,
                        "partition", metadata.partition(), "offset", metadata.offset());
            }
        }
        Out.emit("done");
    }
}
