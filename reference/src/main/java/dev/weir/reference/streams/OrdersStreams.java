package dev.weir.reference.streams;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The orders example as a Kafka Streams application with exactly_once_v2, for the tests that
 * kill it (and the broker) mid-stream: orders keyed by order id with "customer,product,quantity"
 * values in; one confirmation per order out (stateless, same key), and per-product inventory
 * totals (re-keyed by product, so through a repartition topic, summed in a store with a
 * changelog topic).
 *
 * Arguments: bootstrapServers applicationId stateDir ordersTopic confirmationsTopic totalsTopic
 * [groupProtocol: classic (the default) or streams, KIP-1071's StreamsGroupHeartbeat].
 * Prints "STATE <new state>" on every state change, so the test can wait for RUNNING, "CLOSED
 * true" when a SIGTERM closed it cleanly, and
 * "THREAD FAILED <exception>" when a stream thread dies and is replaced.
 */
public final class OrdersStreams {
    public static void main(String[] args) throws InterruptedException {
        String bootstrap = args[0], applicationId = args[1], stateDir = args[2];
        String orders = args[3], confirmations = args[4], totals = args[5];
        String groupProtocol = args.length > 6 ? args[6] : "classic";

        Properties config = new Properties();
        config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        config.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        // On the streams protocol the session and heartbeat are the group's configs
        // (streams.session.timeout.ms), not the consumer's below.
        config.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, groupProtocol);
        config.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        config.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // A member killed with -9 leaves its group after this; the smallest the brokers allow.
        config.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        config.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        config.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> input = builder.stream(orders, Consumed.with(Serdes.String(), Serdes.String()));
        input.mapValues((orderId, order) -> "confirmed " + orderId + " " + order)
             .to(confirmations, Produced.with(Serdes.String(), Serdes.String()));
        input.map((orderId, order) -> {
                 String[] fields = order.split(",");
                 return org.apache.kafka.streams.KeyValue.pair(fields[1], Long.parseLong(fields[2]));
             })
             .groupByKey(Grouped.with("by-product", Serdes.String(), Serdes.Long()))
             .reduce(Long::sum, Materialized.as("inventory"))
             .toStream()
             .to(totals, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), config);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) stopped.countDown();
        });
        // A stream thread that dies (e.g. of a timeout while the broker restarts) is replaced, as
        // production EOS applications configure it; the exception is printed for the test's log.
        streams.setUncaughtExceptionHandler(exception -> {
            System.out.println("THREAD FAILED " + exception);
            System.out.flush();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        // "CLOSED true" once close() finished in time: the state listener runs after close() is
        // woken, so its "STATE NOT_RUNNING" may not be printed before the JVM exits
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            boolean closed = streams.close(Duration.ofSeconds(30));
            System.out.println("CLOSED " + closed);
            System.out.flush();
            stopped.countDown();
        }));
        streams.start();
        stopped.await();
    }
}
