package dev.weir.reference.client;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/** One JSON object per stdout line, flushed at once, for the Python tests to parse. */
final class Out {
    private Out() {}

    /** Prints {"event": event, k1: v1, k2: v2, ...}. */
    static synchronized void emit(String event, Object... keysAndValues) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", event);
        for (int i = 0; i + 1 < keysAndValues.length; i += 2) {
            line.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        StringBuilder text = new StringBuilder();
        json(line, text);
        System.out.println(text);
        System.out.flush();
    }

    /** JSON for strings, numbers, booleans, null, collections and maps (Jackson is not on the compile classpath). */
    static void json(Object value, StringBuilder out) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof Number || value instanceof Boolean) {
            out.append(value);
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            String separator = "";
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                out.append(separator);
                json(String.valueOf(entry.getKey()), out);
                out.append(':');
                json(entry.getValue(), out);
                separator = ",";
            }
            out.append('}');
        } else if (value instanceof Iterable<?> items) {
            out.append('[');
            String separator = "";
            for (Object item : items) {
                out.append(separator);
                json(item, out);
                separator = ",";
            }
            out.append(']');
        } else {
            out.append('"');
            for (char c : value.toString().toCharArray()) {
                if (c == '"' || c == '\\') out.append('\\').append(c);
                else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                else out.append(c);
            }
            out.append('"');
        }
    }

    /** The exception class a Kafka call failed with, its cause unwrapped (ExecutionException, KafkaException). */
    static String errorName(Throwable error) {
        Throwable cause = error;
        while ((cause instanceof java.util.concurrent.ExecutionException
                || cause.getClass() == org.apache.kafka.common.KafkaException.class) && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause.getClass().getSimpleName();
    }

    static Properties properties(String bootstrap, String... keysAndValues) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        for (int i = 0; i + 1 < keysAndValues.length; i += 2) {
            props.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return props;
    }
}
