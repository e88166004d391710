"""The consumer group protocol of Kafka 4 (KIP-848): group and member epochs, server-side assignment,
incremental reconciliation. ``coordinator.py`` is the entry point."""
