package dev.weir.reference;

import java.util.Map;

import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;

/**
 * Prints the wire layout of every request and response of the kafka-clients on the classpath,
 * version by version, as Kafka's own generated readers and writers use it, so that the tests can
 * check our message declarations against the reference Kafka (tests/protocol's JSON check stops at
 * the schemas kafka-python ships).
 *
 * One line per (api key, request|response, version): tab-separated api key, kind, version,
 * "flexible" or "fixed", and the fields in order, each "path:type:nullable:tag" (tag -1 for a field in the body), nested
 * struct fields after their field with a dotted path, tagged fields after the plain ones.
 */
public final class MessageSchemas {
    public static void main(String[] args) {
        StringBuilder out = new StringBuilder();
        for (ApiMessageType type : ApiMessageType.values()) {
            print(out, type.apiKey(), "request", type.requestSchemas());
            print(out, type.apiKey(), "response", type.responseSchemas());
        }
        System.out.print(out);
    }

    private static void print(StringBuilder out, short apiKey, String kind, Schema[] versions) {
        for (int version = 0; version < versions.length; version++) {
            if (versions[version] == null) continue;  // below the first valid version
            boolean flexible = false;
            for (BoundField bound : versions[version].fields()) flexible |= bound.def.type instanceof TaggedFields;
            out.append(apiKey).append('\t').append(kind).append('\t').append(version)
               .append('\t').append(flexible ? "flexible" : "fixed");
            fields(out, versions[version], "");
            out.append('\n');
        }
    }

    private static void fields(StringBuilder out, Schema schema, String prefix) {
        TaggedFields tagged = null;
        for (BoundField bound : schema.fields()) {
            if (bound.def.type instanceof TaggedFields t) {
                tagged = t;
                continue;
            }
            field(out, prefix + bound.def.name, bound.def.type, -1);
        }
        if (tagged != null) {
            for (Map.Entry<Integer, Field> entry : tagged.fields().entrySet()) {
                Field field = entry.getValue();
                field(out, prefix + field.name, field.type, entry.getKey());
            }
        }
    }

    private static void field(StringBuilder out, String path, Type type, int tag) {
        Type element = type.arrayElementType().orElse(null);
        Type base = element != null ? element : type;
        String name = (element != null ? "[]" : "") + (base instanceof Schema ? "struct" : base.toString());
        out.append('\t').append(path).append(':').append(name).append(':').append(type.isNullable())
           .append(':').append(tag);
        if (base instanceof Schema nested) fields(out, nested, path + ".");
    }
}
