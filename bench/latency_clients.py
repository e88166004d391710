"""The two processes of bench/latency.py: a producer at a fixed rate and a consumer.

    python -m bench.latency_clients produce BOOTSTRAP TOPIC RATE SECONDS SIZE MODE
    python -m bench.latency_clients consume BOOTSTRAP TOPIC RECORDS MODE

Both are confluent-kafka (librdkafka). Every value starts with the monotonic clock's time of its
``produce`` call (CLOCK_MONOTONIC is one clock for all processes of the machine) and a flag byte
(1 = measured, 0 = warm-up). The producer (acks=all, linger.ms 0, idempotent) first sends warm-up
records until the consumer has seen one (it touches a file), then ``RATE`` records a second
for ``SECONDS``; MODE ``txn`` wraps them in transactions committed every 100 ms. Each prints one
JSON line of latencies in microseconds: the producer its acknowledgements' (send to delivery
report), the consumer its records' (send to the application's hands).
"""

from __future__ import annotations

import json
import os
import struct
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

COMMIT_INTERVAL_S = 0.1
STAMP = struct.Struct("<qB")


def produce(bootstrap: str, topic: str, rate: int, seconds: float, size: int, mode: str, ready_file: str) -> dict:
    config = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "enable.idempotence": True,
              "queue.buffering.max.messages": 1000000, "queue.buffering.max.kbytes": 1048576}
    transactional = mode == "txn"
    if transactional:
        config["transactional.id"] = f"bench-latency-{topic}"
    producer = Producer(config)
    if transactional:
        producer.init_transactions(30)
    padding = os.urandom(size - STAMP.size)
    acks: list[int] = []

    def on_delivery(err, msg):
        if err is None:
            sent, measured = STAMP.unpack_from(msg.value())
            if measured:
                acks.append((time.monotonic_ns() - sent) // 1000)

    def send(measured: int) -> None:
        producer.produce(topic, STAMP.pack(time.monotonic_ns(), measured) + padding, partition=0,
                         on_delivery=on_delivery)

    # Warm-up: connections, metadata, the transaction coordinator, the consumer's first fetch.
    deadline = time.monotonic() + 60
    while not os.path.exists(ready_file):
        if time.monotonic() > deadline:
            raise RuntimeError("the consumer saw no warm-up record")
        if transactional:
            producer.begin_transaction()
        send(0)
        if transactional:
            producer.commit_transaction(30)
        producer.flush(10)
        time.sleep(0.05)

    total = int(rate * seconds)
    interval_ns = 1e9 / rate
    began = time.monotonic_ns()
    next_commit = began + COMMIT_INTERVAL_S * 1e9
    if transactional:
        producer.begin_transaction()
    sent = 0
    while sent < total:
        now = time.monotonic_ns()
        due = min(total, int((now - began) / interval_ns) + 1)
        while sent < due:
            try:
                send(1)
                sent += 1
            except BufferError:
                producer.poll(0.001)
        if transactional and now >= next_commit:
            producer.commit_transaction(30)
            producer.begin_transaction()
            next_commit += COMMIT_INTERVAL_S * 1e9
        wait_s = (began + sent * interval_ns - time.monotonic_ns()) / 1e9
        producer.poll(max(wait_s, 0))
    if transactional:
        producer.commit_transaction(30)
    producer.flush(60)
    return {"latencies_us": acks, "seconds": (time.monotonic_ns() - began) / 1e9}


def consume(bootstrap: str, topic: str, records: int, mode: str, ready_file: str) -> dict:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-latency-{topic}",
                         "enable.auto.commit": False,
                         "isolation.level": "read_committed" if mode == "txn" else "read_uncommitted"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    latencies: list[int] = []
    deadline = time.monotonic() + 120
    while len(latencies) < records and time.monotonic() < deadline:
        # poll, not consume(n): consume waits up to its timeout for n records, which would be measured
        message = consumer.poll(0.1)
        if message is None or message.error():
            continue
        now = time.monotonic_ns()
        sent, measured = STAMP.unpack_from(message.value())
        if measured:
            latencies.append((now - sent) // 1000)
        elif not os.path.exists(ready_file):
            open(ready_file, "w").close()
    consumer.close()
    return {"latencies_us": latencies}


def main(argv=None) -> int:
    argv = argv or sys.argv[1:]
    role, bootstrap, topic = argv[:3]
    ready_file = os.environ["BENCH_LATENCY_READY"]
    if role == "produce":
        rate, seconds, size, mode = int(argv[3]), float(argv[4]), int(argv[5]), argv[6]
        result = produce(bootstrap, topic, rate, seconds, size, mode, ready_file)
    else:
        result = consume(bootstrap, topic, int(argv[3]), argv[4], ready_file)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
