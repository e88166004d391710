"""KIP-1071 streams groups: Kafka Streams applications on the broker's own task assignment."""
