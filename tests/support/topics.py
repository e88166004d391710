"""Creating topics from tests, on Weir or on Apache Kafka alike (confluent-kafka's AdminClient)."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

#: For topics whose records carry fixed timestamps from the past: at the default retention.ms
#: (7 days) a broker's retention check, which runs every log.retention.check.interval.ms (5 min),
#: deletes such records whenever it happens to run during the test (Apache Kafka rolls and deletes
#: even the active segment), so a read that follows finds the log start past them.
KEEP_FOREVER = {"retention.ms": "-1"}


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                            config=dict(config or {}))])
    futures[name].result(10)
