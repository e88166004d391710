package dev.weir.reference.chaos;

import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The chaos campaign's Java transactional producer (chaos/worker.py has the Python ones and the
 * journal format): transactions of 1-20 records to one random partition of chaos-in, one in ten
 * aborted on purpose, each begun, committed or aborted in the journal RUN_DIR/NAME.journal. An
 * abort after an abortable error is journalled; any other failure ends the process (exit 3) with
 * the transaction in doubt. SIGTERM: the transaction under way finishes, then the process exits.
 *
 * <p>Arguments: name runDir bootstrap
 */
public final class ChaosProducer {
    private static final Pattern BEGIN = Pattern.compile(
            "\"e\": \"begin\", \"txn\": (\\d+), \"first\": (\\d+), \"count\": (\\d+)");
    private static volatile boolean stopping;

    public static void main(String[] args) throws Exception {
        String name = args[0];
        Path journalPath = Path.of(args[1], name + ".journal");
        long txn = 0, seq = 0;
        if (Files.exists(journalPath)) {
            for (String line : Files.readAllLines(journalPath)) {
                Matcher begun = BEGIN.matcher(line);
                if (begun.find()) {
                    txn = Math.max(txn, Long.parseLong(begun.group(1)));
                    seq = Math.max(seq, Long.parseLong(begun.group(2)) + Long.parseLong(begun.group(3)));
                }
            }
        }
        CountDownLatch finished = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            try {
                finished.await();
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }));
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[2]);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, name);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "10000");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        Random random = new Random();
        int status = 0;
        try (Writer journal = new FileWriter(journalPath.toFile(), true);
             var producer = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            producer.initTransactions();
            while (!stopping) {
                int partition = random.nextInt(3), count = 1 + random.nextInt(20);
                boolean abort = random.nextDouble() < 0.1;
                txn++;
                long first = seq;
                seq += count;
                write(journal, "{\"e\": \"begin\", \"txn\": " + txn + ", \"first\": " + first + ", \"count\": "
                        + count + ", \"partition\": " + partition + "}");
                producer.beginTransaction();
                try {
                    for (long s = first; s < first + count; s++) {
                        String value = "{\"w\": \"" + name + "\", \"t\": " + txn + ", \"s\": " + s + "}";
                        producer.send(new ProducerRecord<>("chaos-in", partition, name, value));
                    }
                    if (abort) {
                        producer.abortTransaction();
                        write(journal, "{\"e\": \"abort\", \"txn\": " + txn + "}");
                    } else {
                        producer.commitTransaction();
                        write(journal, "{\"e\": \"commit\", \"txn\": " + txn + "}");
                    }
                } catch (KafkaException error) {
                    producer.abortTransaction();  // throws where the error is not abortable: in doubt
                    write(journal, "{\"e\": \"abort\", \"txn\": " + txn + "}");
                }
            }
        } catch (Exception error) {
            System.err.println(name + ": " + error);
            status = 3;
        } finally {
            finished.countDown();
        }
        if (status != 0) {
            Runtime.getRuntime().halt(status);  // no shutdown hooks: nothing is left to finish
        }
    }

    private static void write(Writer journal, String line) throws IOException {
        journal.write(line + "\n");
        journal.flush();
    }
}
