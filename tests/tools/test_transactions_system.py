"""Kafka's transactions system test (tests/kafkatest/tests/core/transactions_test.py), on one node
of each broker: Kafka's own TransactionalMessageCopier processes copy a numbered input topic to an
output topic in transactions that also commit their input offsets, while the broker and the
copiers are killed with -9 and restarted; at the end a read_committed reader finds every input
value in the output exactly once.

Scaled down to keep it to about a minute a broker: 20,000 seed records instead of 100,000, one
node instead of three (so a broker bounce is the whole cluster going away and coming back),
transactions of 500 records. As in Kafka's test, one copier per input partition (assigned, not
subscribed), the consumer group shared, and the transaction timeout 40 s, longer than any bounce,
so no open transaction is aborted by the coordinator under a copier (which would fence it).
"""

from __future__ import annotations

import collections
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.tools.tools import Copier

INPUT, OUTPUT, GROUP = "transactions-input", "transactions-output", "transactions-test-consumer-group"
INPUT_PARTITIONS, OUTPUT_PARTITIONS = 2, 3
RECORDS, TRANSACTION_SIZE, TRANSACTION_TIMEOUT_MS = 20_000, 500, 40_000
#: The copier bounces and broker bounces, in order, each once the copy has gone this much further.
BOUNCES = [("copier", 0), ("broker", None), ("copier", 1), ("broker", None), ("copier", 0)]
PROGRESS_STEP = 0.12


def create_topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(INPUT, INPUT_PARTITIONS), NewTopic(OUTPUT, OUTPUT_PARTITIONS)])
    for future in futures.values():
        future.result(30)


def seed(bootstrap: str) -> list[int]:
    """The numbered input, written by an idempotent producer (as the test's VerifiableProducer);
    value i goes to partition i % 2, so each partition holds its numbers in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    failures = []
    for value in range(RECORDS):
        producer.produce(INPUT, value=str(value).encode(), partition=value % INPUT_PARTITIONS,
                         on_delivery=lambda err, _msg: err and failures.append(err))
        producer.poll(0)
    assert producer.flush(60) == 0 and not failures, failures
    return [RECORDS // INPUT_PARTITIONS + (1 if p < RECORDS % INPUT_PARTITIONS else 0)
            for p in range(INPUT_PARTITIONS)]


def copier(bootstrap: str, partition: int) -> Copier:
    args = ["--broker-list", bootstrap, "--transactional-id", f"copier-{partition}", "--consumer-group", GROUP,
            "--input-topic", INPUT, "--input-partition", str(partition), "--output-topic", OUTPUT,
            "--transaction-size", str(TRANSACTION_SIZE), "--transaction-timeout", str(TRANSACTION_TIMEOUT_MS)]
    if partition == 0:
        args.append("--use-group-metadata")  # the other one commits with a plain ConsumerGroupMetadata(group)
    return Copier(bootstrap, partition, args)


def read_committed(bootstrap: str, deadline: float) -> list[int]:
    """Every committed output value, read from the beginning until each partition's end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "transactions-verifier",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(OUTPUT, p, OFFSET_BEGINNING) for p in range(OUTPUT_PARTITIONS)])
    values, at_end = [], set()
    try:
        while len(at_end) < OUTPUT_PARTITIONS and time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=1.0):
                if message.error() and message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                elif message.error():
                    raise AssertionError(message.error())
                else:
                    values.append(int(message.value()))
                    at_end.discard(message.partition())
    finally:
        consumer.close()
    assert len(at_end) == OUTPUT_PARTITIONS, f"output not read to its end in time ({len(values)} values)"
    return values


def test_transactional_copy_is_exactly_once_across_kill_9(any_broker_to_kill):
    broker = any_broker_to_kill
    began = time.monotonic()
    create_topics(broker.bootstrap)
    per_partition = seed(broker.bootstrap)
    copiers = [copier(broker.bootstrap, p) for p in range(INPUT_PARTITIONS)]
    for each in copiers:
        each.start()

    # Progress survives a copier restart: a new one starts from the committed offsets, and its
    # "remaining" counts only what is left.
    def progress() -> float:
        done = sum(total - (c.remaining if c.remaining >= 0 else total)
                   for c, total in zip(copiers, per_partition, strict=False))
        return done / RECORDS

    unexpected_exits = []

    def supervise() -> None:
        """A copier that exits on its own before it is done has hit an error it does not survive."""
        for each in copiers:
            if not each.finished.is_set() and each.process.poll() is not None:
                unexpected_exits.append((each.index, each.process.returncode, "".join(each.stderr_tail[-5:])))
                each.start()

    def wait_until(condition, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            supervise()
            assert time.monotonic() < deadline, f"{what}: progress {progress():.0%}, exits {unexpected_exits}"
            time.sleep(0.1)  # poll interval of a deadline-bounded wait on the copiers' status lines

    bounces = 0
    for target, index in BOUNCES:
        goal = min(0.9, progress() + PROGRESS_STEP)
        wait_until(lambda goal=goal: progress() >= goal or all(c.finished.is_set() for c in copiers), 60,
                   f"no progress before bounce {bounces}")
        if all(c.finished.is_set() for c in copiers):
            break
        if target == "copier":
            copiers[index].kill()
            copiers[index].start()
        else:
            broker.kill()
            broker.start()
        bounces += 1
    wait_until(lambda: all(c.finished.is_set() for c in copiers), 120, "copiers did not finish")
    for each in copiers:
        assert each.process.wait(30) == 0

    values = read_committed(broker.bootstrap, time.monotonic() + 60)
    counts = collections.Counter(values)
    duplicates = {value: n for value, n in counts.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} values copied more than once, e.g. {list(duplicates.items())[:5]}"
    assert set(values) == set(range(RECORDS)), f"missing {len(set(range(RECORDS)) - set(values))} values"
    assert bounces >= 4, f"only {bounces} bounces happened before the copy finished"
    assert not unexpected_exits, unexpected_exits
    print(f"\n{broker.kind}: {bounces} bounces, copier starts {[c.starts for c in copiers]}, "
          f"{time.monotonic() - began:.1f} s")
