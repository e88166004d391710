package dev.weir.reference;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;

/**
 * The partition the Java producer's built-in partitioner gives each key: reads
 * "partitionCount hexKey" lines on stdin and prints one partition number per line.
 * Our client's murmur2 partitioner is checked against this, not against a re-implementation.
 */
public final class KeyPartitions {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            String[] fields = line.trim().split(" ", 2);
            int partitions = Integer.parseInt(fields[0]);
            byte[] key = fields.length > 1 ? hex.parseHex(fields[1]) : new byte[0];
            out.append(BuiltInPartitioner.partitionForKey(key, partitions)).append('\n');
        }
        System.out.print(out);
    }
}
