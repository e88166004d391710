"""CPU seconds per GB of the client process for ``Producer.produce`` against a real broker.

    python -m bench.produce_cpu [--bootstrap HOST:PORT] [--records 300000] [--size 1024] [--rounds 1]
                                [--client ours|confluent]

Each round produces ``--records`` values of ``--size`` bytes (no key) to a new topic of three
partitions (acks=all, idempotent, linger_ms=5, uvloop) and prints the client's process_time
around the produce loop and the flush, per GB of values. Wall time is not reported: on a
shared machine it measures the neighbours. Without ``--bootstrap`` a broker is started
(weir.testing.run_broker) for the run; to compare two trees, start one broker and point each
tree's run at it in alternation.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import uuid

import uvloop
from confluent_kafka.admin import AdminClient, NewTopic

from weir.client.producer import Producer


def _confluent_round(bootstrap: str, topic: str, records: int, payload: bytes) -> float:
    """The same with confluent-kafka's Python API, as bench/client.py runs it (poll(0) every 1,000)."""
    from confluent_kafka import Producer as ConfluentProducer
    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5})
    producer.produce(topic, b"warm-up")
    producer.flush(30)
    began = time.process_time()  # librdkafka's threads are this process's: their CPU counts
    for i in range(records):
        while True:
            try:
                producer.produce(topic, payload)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("confluent-kafka left records undelivered")
    return time.process_time() - began


async def _round(bootstrap: str, topic: str, records: int, payload: bytes) -> float:
    async with Producer(bootstrap, acks="all", enable_idempotence=True, linger_ms=5) as producer:
        await producer.send_and_wait(topic, b"warm-up")
        began = time.process_time()
        for _ in range(records):
            await producer.produce(topic, payload)
        await producer.flush()
        return time.process_time() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--client", choices=("ours", "confluent"), default="ours")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        bootstrap = args.bootstrap
        if bootstrap is None:
            from weir.testing import run_broker
            bootstrap = stack.enter_context(run_broker()).bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for _ in range(args.rounds):
            topic = f"produce-cpu-{uuid.uuid4().hex[:8]}"
            admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(30)
            try:
                payload = b"x" * args.size
                spent = (_confluent_round(bootstrap, topic, args.records, payload) if args.client == "confluent"
                         else uvloop.run(_round(bootstrap, topic, args.records, payload)))
            finally:
                admin.delete_topics([topic])[topic].result(30)
            print(f"{spent / (args.records * args.size / 1e9):.3f} CPU s/GB ({spent:.2f} s for {args.records} records)",
                  flush=True)


if __name__ == "__main__":
    main()
