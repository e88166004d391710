"""The exactly-once pipeline's records per second, next to the same pipeline without transactions.

The pipeline is examples/exactly_once_orders.py's: read an order, write an
order confirmation and an inventory update. ``--records`` orders (100,000)
are loaded first; then, with confluent-kafka in this process:

- exactly-once: read_committed consumer, transactional producer, input
  offsets sent in the transaction, a commit every ``--commit-ms`` (100 ms);
- at-least-once: the same loop with a plain producer; every 100 ms it
  flushes the outputs and commits the consumer's offsets.

Records/s run from the first record read to the last commit. Each broker is
started fresh per round; rounds alternate Weir and Tansu.

    python -m bench.pipeline [--records 100000] [--commit-ms 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import queue
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer

from bench.throughput import REPO, compare, create_topic

sys.path.insert(0, str(REPO / "examples"))
import exactly_once_orders as example  # noqa: E402

STALL_S = 30  # no record for this long: the broker cannot run this pipeline
PIPELINE_DEADLINE_S = 120


def load_orders(bootstrap: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 1000000})
    for number in range(count):
        key, value = example.order(number)
        while True:
            try:
                producer.produce(example.ORDERS, value, key)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(60):
        raise RuntimeError("orders were not all acknowledged")


def pipeline(bootstrap: str, records: int, commit_s: float, exactly_once: bool) -> float:
    mode = "eos" if exactly_once else "alo"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{mode}", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed" if exactly_once else "read_uncommitted"})
    config = {"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 1000000}
    if exactly_once:
        config.update({"transactional.id": f"bench-{mode}", "metadata.recovery.strategy": "none"})
    producer = Producer(config)
    if exactly_once:
        producer.init_transactions(30)
    consumer.subscribe([example.ORDERS])
    processed, began, last_commit, last_record = 0, None, 0.0, time.monotonic()
    in_txn = False
    try:
        while processed < records:
            messages = consumer.consume(1000, timeout=0.05)
            now = time.monotonic()
            if not messages and now - last_record > STALL_S:
                raise TimeoutError(f"{mode}: no record for {STALL_S} s after {processed}")
            for message in messages:
                if message.error():
                    raise KafkaException(message.error())
                if began is None:
                    began = last_commit = now
                if exactly_once and not in_txn:
                    producer.begin_transaction()
                    in_txn = True
                _transform(producer, message)
                processed += 1
                last_record = now
            if began is not None and (now - last_commit >= commit_s or processed >= records):
                _commit(consumer, producer, exactly_once)
                in_txn = False
                last_commit = time.monotonic()
        return processed / (time.monotonic() - began)
    finally:
        consumer.close()


def _transform(producer: Producer, message) -> None:
    placed = json.loads(message.value())
    confirmation = {"order_id": placed["order_id"], "customer": placed["customer"], "status": "confirmed"}
    update = {"order_id": placed["order_id"], "item": placed["item"], "delta": -placed["quantity"]}
    while True:
        try:
            producer.produce(example.CONFIRMATIONS, json.dumps(confirmation).encode(), message.key())
            producer.produce(example.INVENTORY, json.dumps(update).encode(), placed["item"].encode())
            return
        except BufferError:
            producer.poll(0.01)


def _commit(consumer: Consumer, producer: Producer, exactly_once: bool) -> None:
    positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
    if exactly_once:
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(60)
    else:
        if producer.flush(60):
            raise RuntimeError("outputs were not all acknowledged")
        consumer.commit(offsets=positions, asynchronous=False)


def _pipeline_child(results, *args) -> None:
    try:
        results.put(pipeline(*args))
    except (KafkaException, TimeoutError, RuntimeError) as exc:
        results.put(str(exc))


def bounded_pipeline(bootstrap: str, records: int, commit_s: float, exactly_once: bool) -> float | str:
    """The pipeline in a child process: a librdkafka call can block past its own timeout
    (confluentinc/librdkafka#5456), and a broker that cannot run the pipeline must not stall the benchmark."""
    results = multiprocessing.Queue()
    child = multiprocessing.Process(target=_pipeline_child, args=(results, bootstrap, records, commit_s, exactly_once))
    child.start()
    try:
        return results.get(timeout=PIPELINE_DEADLINE_S)
    except queue.Empty:
        return f"no result within {PIPELINE_DEADLINE_S} s"
    finally:
        child.kill()
        child.join()


def run(broker, args) -> dict:
    for topic in (example.ORDERS, example.CONFIRMATIONS, example.INVENTORY):
        create_topic(broker.bootstrap, topic, args.partitions)
    load_orders(broker.bootstrap, args.records)
    results = {}
    for name, exactly_once in (("exactly-once rec/s", True), ("at-least-once rec/s", False)):
        outcome = bounded_pipeline(broker.bootstrap, args.records, args.commit_ms / 1000, exactly_once)
        if isinstance(outcome, str):
            print(f"{broker.name}: {name} failed: {outcome}", flush=True)
            outcome = math.nan
        results[name] = outcome
    return results


def bench_results(argv=None) -> dict:
    """The run ``main`` prints, its figures returned (``summarise``): for bench/report.py."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--commit-ms", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    return compare(run, args, f"{args.records} orders -> confirmation + inventory update, "
                              f"{args.partitions} partitions, commit every {args.commit_ms} ms; confluent-kafka")


def main(argv=None) -> int:
    bench_results(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
