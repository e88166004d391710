package dev.weir.reference.client;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One producer kept open (one connection to the broker) that sends a record of SIZE bytes for each
 * "send SIZE" line on stdin and prints its outcome: "sent" with the offset, or "failed" with the
 * exception's class (e.g. KafkaStorageException). Finishes on "stop".
 *
 * <p>Arguments: bootstrap topic [name value]... (producer settings, e.g. retries 0)
 */
public final class ProduceOnCommand {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String[] settings = java.util.Arrays.copyOfRange(args, 2, args.length);
        var props = Out.properties(bootstrap, settings);
        try (var producer = new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
             var input = new BufferedReader(new InputStreamReader(System.in))) {
            Out.emit("ready");
            String line;
            while ((line = input.readLine()) != null && !line.equals("stop")) {
                int size = Integer.parseInt(line.split(" ")[1]);
                long started = System.nanoTime();
                try {
                    RecordMetadata sent = producer.send(new ProducerRecord<>(topic, new byte[size])).get();
                    Out.emit("sent", "offset", sent.offset(), "ms", (System.nanoTime() - started) / 1_000_000);
                } catch (ExecutionException e) {
                    Out.emit("failed", "error", e.getCause().getClass().getSimpleName(),
                            "ms", (System.nanoTime() - started) / 1_000_000);
                }
            }
        }
        Out.emit("done");
    }
}
