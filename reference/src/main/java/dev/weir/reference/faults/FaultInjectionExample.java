package dev.weir.reference.faults;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A Java test's use of Weir's fault injection (README "Fault injection from any language"): three
 * NOT_LEADER_OR_FOLLOWER answers to Produce armed over the control channel, an idempotent producer
 * that rides them out, and the channel's count of injected answers.
 *
 * <p>Arguments: bootstrap faultsUrl token topic count. Prints the channel's status (JSON) last.
 */
public final class FaultInjectionExample {
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    static String control(String url, String token, String method, String path, String json) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url + path))
                .header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/json");
        request = "GET".equals(method) ? request.GET() : request.POST(HttpRequest.BodyPublishers.ofString(json));
        HttpResponse<String> answer = HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
        if (answer.statusCode() != 200) {
            throw new IllegalStateException(path + ": " + answer.statusCode() + " " + answer.body());
        }
        return answer.body();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], url = args[1], token = args[2], topic = args[3];
        int count = Integer.parseInt(args[4]);
        control(url, token, "POST", "/faults/error",
                "{\"api\": \"Produce\", \"code\": \"NOT_LEADER_OR_FOLLOWER\", \"times\": 3}");
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        try (var producer = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "value-" + i)).get();
            }
        }
        System.out.println(control(url, token, "GET", "/faults", null).strip());
    }
}
