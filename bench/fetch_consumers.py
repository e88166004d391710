"""The consumers of bench/fetch.py, one per process: each reads every record's value.

    python -m bench.fetch_consumers CLIENT BOOTSTRAP TOPIC PARTITIONS RECORDS ISOLATION

prints one JSON line: {"MB/s": ..., "records": ..., "client CPU": ...}, MB/s of values from the
first fetch call until the last record is in the application's hands, and the consumer process's
CPU seconds (all its threads) per second of that time: near 1.0 for a single-threaded client,
the client's own work bounds its figure and no broker can raise it (java: not measured, the
tool runs in a JVM of its own). Clients: librdkafka (confluent-kafka with
the issue's settings, librdkafka's defaults otherwise), librdkafka-fqb10 (the same with
``fetch.queue.backoff.ms`` 10, see bench/fetch.py), java (Kafka's kafka-consumer-perf-test,
which reads each value's length), aiokafka, ours (weir.client), ours-arrow (its getmany_arrow).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FETCH_MAX_BYTES = 52428800
PARTITION_FETCH_BYTES = 10485760  # the max.partition.fetch.bytes: 10 MB answers per partition


def librdkafka(bootstrap, topic, partitions, records, isolation, extra=None) -> tuple[float, int, float | None]:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False, "fetch.max.bytes": FETCH_MAX_BYTES,
                         "max.partition.fetch.bytes": PARTITION_FETCH_BYTES, "isolation.level": isolation,
                         **(extra or {})})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    received = value_bytes = 0
    began, cpu_began = time.monotonic(), time.process_time()
    deadline = began + 300
    while received < records and time.monotonic() < deadline:
        for message in consumer.consume(10000, timeout=1.0):
            if not message.error():
                received += 1
                value_bytes += len(message.value())
    elapsed, cpu = time.monotonic() - began, time.process_time() - cpu_began
    consumer.close()
    return value_bytes / elapsed / 1e6, received, cpu / elapsed


def librdkafka_fqb10(*args) -> tuple[float, int, float | None]:
    return librdkafka(*args, extra={"fetch.queue.backoff.ms": 10})


def aiokafka(bootstrap, topic, partitions, records, isolation) -> tuple[float, int, float | None]:
    async def consume():
        from aiokafka import AIOKafkaConsumer, TopicPartition
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    fetch_max_bytes=FETCH_MAX_BYTES, max_partition_fetch_bytes=PARTITION_FETCH_BYTES)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            return await _drain(consumer, records)
        finally:
            await consumer.stop()
    return asyncio.run(consume())


def ours(bootstrap, topic, partitions, records, isolation) -> tuple[float, int, float | None]:
    async def consume():
        from weir.client import Consumer, TopicPartition
        async with Consumer(bootstrap_servers=bootstrap, isolation_level=isolation, auto_offset_reset="earliest",
                            fetch_max_bytes=FETCH_MAX_BYTES,
                            max_partition_fetch_bytes=PARTITION_FETCH_BYTES) as consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            return await _drain(consumer, records)
    return asyncio.run(consume())


def ours_arrow(bootstrap, topic, partitions, records, isolation) -> tuple[float, int, float | None]:
    """Our getmany_arrow: the values arrive as one binary column a partition; the application reads
    every value's length from it (pyarrow.compute), as the others read each value's."""
    async def consume():
        import pyarrow.compute as pc
        from weir.client import Consumer, TopicPartition
        async with Consumer(bootstrap_servers=bootstrap, isolation_level=isolation, auto_offset_reset="earliest",
                            fetch_max_bytes=FETCH_MAX_BYTES,
                            max_partition_fetch_bytes=PARTITION_FETCH_BYTES) as consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            received = value_bytes = 0
            began, cpu_began = time.monotonic(), time.process_time()
            deadline = began + 300
            while received < records and time.monotonic() < deadline:
                for batch in (await consumer.getmany_arrow(timeout_ms=1000, max_records=10000)).values():
                    received += batch.num_rows
                    value_bytes += pc.sum(pc.binary_length(batch.column("value"))).as_py() or 0
            elapsed, cpu = time.monotonic() - began, time.process_time() - cpu_began
            return value_bytes / elapsed / 1e6, received, cpu / elapsed
    return asyncio.run(consume())


async def _drain(consumer, records) -> tuple[float, int, float | None]:
    """aiokafka's and our getmany are called alike."""
    received = value_bytes = 0
    began, cpu_began = time.monotonic(), time.process_time()
    deadline = began + 300
    while received < records and time.monotonic() < deadline:
        for batch in (await consumer.getmany(timeout_ms=1000, max_records=10000)).values():
            received += len(batch)
            for record in batch:
                value_bytes += len(record.value)
    elapsed, cpu = time.monotonic() - began, time.process_time() - cpu_began
    return value_bytes / elapsed / 1e6, received, cpu / elapsed


def java(bootstrap, topic, _partitions, records, isolation) -> tuple[float, int, float | None]:
    """kafka-consumer-perf-test (ConsumerPerformance) in a group of its own; its fetch.MB.sec is
    measured from the end of the group's join to the last record (it adds each value's size)."""
    sys.path.insert(0, str(REPO))
    from reference.kafka import classpath
    with tempfile.NamedTemporaryFile("w", suffix=".properties") as config:
        config.write(f"isolation.level={isolation}\nmax.partition.fetch.bytes={PARTITION_FETCH_BYTES}\n"
                     f"fetch.max.bytes={FETCH_MAX_BYTES}\nauto.offset.reset=earliest\n")
        config.flush()
        out = subprocess.run(["java", "-Xmx512m", "-XX:+UseG1GC", "-cp", classpath(),
                              "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap,
                              "--topic", topic, "--num-records", str(records), "--group", f"bench-{uuid.uuid4()}",
                              "--command-config", config.name, "--timeout", "60000"],
                             capture_output=True, text=True, timeout=300)
    rows = [line for line in out.stdout.splitlines() if re.match(r"\d{4}-", line)]
    if not rows:
        raise RuntimeError(f"kafka-consumer-perf-test printed no figures: {out.stdout[-500:]} {out.stderr[-1500:]}")
    fields = [f.strip() for f in rows[-1].split(",")]
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec  (MB there is MiB)
    return float(fields[8]) * 1048576 / 1e6, int(fields[4]), None


CLIENTS = {"librdkafka": librdkafka, "librdkafka-fqb10": librdkafka_fqb10, "java": java,
           "aiokafka": aiokafka, "ours": ours, "ours-arrow": ours_arrow}


def main(argv=None) -> int:
    client, bootstrap, topic, partitions, records, isolation = (argv or sys.argv[1:])
    mbs, received, cpu = CLIENTS[client](bootstrap, topic, int(partitions), int(records), isolation)
    print(json.dumps({"MB/s": mbs, "records": received, "client CPU": cpu}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
