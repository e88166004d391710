"""Exactly-once order processing: read an order, write its confirmation and its
inventory update atomically, together with the consumer's progress.

The shape of Kafka's own exactly-once example (consume-transform-produce in
transactions, offsets sent with ``send_offsets_to_transaction``), with
confluent-kafka. Run a broker (``make run``), then:

    python examples/exactly_once_orders.py orders --count 1000      # sample input
    python examples/exactly_once_orders.py process                  # the processor

Kill the processor at any moment (even with -9) and start it again: every
order still gets exactly one confirmation and one inventory update, because
a transaction either commits the outputs *and* the input offsets, or neither.
Read the outputs with ``isolation.level=read_committed``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ORDERS, CONFIRMATIONS, INVENTORY = "orders", "order-confirmations", "inventory-updates"


def create_topics(bootstrap: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = [NewTopic(name, num_partitions=partitions, replication_factor=1)
              for name in (ORDERS, CONFIRMATIONS, INVENTORY)]
    for future in admin.create_topics(wanted).values():
        try:
            future.result(10)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise


def order(number: int) -> tuple[bytes, bytes]:
    """A sample order, keyed by customer so each customer's orders stay in order."""
    customer = f"customer-{number % 10}"
    body = {"order_id": number, "customer": customer, "item": f"item-{number % 7}", "quantity": 1 + number % 3}
    return customer.encode(), json.dumps(body).encode()


def write_orders(args) -> None:
    create_topics(args.bootstrap, args.partitions)
    producer = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True})
    for number in range(args.start, args.start + args.count):
        key, value = order(number)
        producer.produce(ORDERS, value, key)
        producer.poll(0)
    if producer.flush(30):
        raise SystemExit("some orders were not acknowledged")
    print(f"wrote orders {args.start}..{args.start + args.count - 1}")


class Processor:
    def __init__(self, args):
        self.commit_interval_s = args.commit_interval_ms / 1000
        settings = {
            "bootstrap.servers": args.bootstrap, "group.id": args.group,
            "isolation.level": "read_committed",  # never read another transaction's aborted output
            "enable.auto.commit": False, "auto.offset.reset": "earliest"}
        if args.group_protocol == "consumer":
            # KIP-848: the broker assigns partitions and its group config (consumer.session.timeout.ms)
            # sets the session; the offsets carry the member epoch, which fences a zombie's commit.
            # No group.instance.id: a static member restarted after a crash is refused
            # (UNRELEASED_INSTANCE_ID, fatal to the client) until its predecessor's session ends, where
            # a new dynamic member joins at once and gets the partitions when that session ends.
            settings["group.protocol"] = "consumer"
        else:
            # a restarted processor takes its predecessor's place without a rebalance (KIP-345)
            settings.update({"group.instance.id": args.transactional_id, "session.timeout.ms": args.session_timeout_ms})
        self.consumer = Consumer(settings)
        self.producer = Producer({
            "bootstrap.servers": args.bootstrap, "transactional.id": args.transactional_id, "linger.ms": 5,
            # librdkafka 2.10+ "re-bootstraps" when every broker is unreachable (a one-broker restart), and
            # send_offsets_to_transaction may then wait forever on the dropped broker handle it cached as the
            # group coordinator (confluentinc/librdkafka#5511, #5456). Against a multi-broker cluster, drop this.
            "metadata.recovery.strategy": "none"})
        self.in_transaction = False
        self.processed = 0
        self.stopping = False

    def run(self) -> None:
        # fences a previous instance with this transactional id and aborts what it left open
        self.producer.init_transactions(60)
        self.consumer.subscribe([ORDERS], on_revoke=self._on_revoke)
        started = 0.0
        while not self.stopping:
            for message in self.consumer.consume(500, timeout=0.05):
                if message.error():
                    raise KafkaException(message.error())
                if not self.in_transaction:
                    self.producer.begin_transaction()
                    self.in_transaction, started = True, time.monotonic()
                self._transform(message)
            if self.in_transaction and time.monotonic() - started >= self.commit_interval_s:
                self._commit()
        if self.in_transaction:
            self._commit()
        self.consumer.close()

    def _transform(self, message) -> None:
        placed = json.loads(message.value())
        confirmation = {"order_id": placed["order_id"], "customer": placed["customer"], "status": "confirmed"}
        update = {"order_id": placed["order_id"], "item": placed["item"], "delta": -placed["quantity"]}
        self.producer.produce(CONFIRMATIONS, json.dumps(confirmation).encode(), message.key())
        self.producer.produce(INVENTORY, json.dumps(update).encode(), placed["item"].encode())
        self.processed += 1

    def _commit(self) -> None:
        positions = [tp for tp in self.consumer.position(self.consumer.assignment()) if tp.offset >= 0]
        try:
            self.producer.send_offsets_to_transaction(positions, self.consumer.consumer_group_metadata(), 30)
            self.producer.commit_transaction(60)
            print(f"committed {self.processed}", flush=True)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise  # fatal, e.g. fenced by a newer instance: stop
            print(f"aborting: {exc.args[0]}", flush=True)
            self._abort()
        self.in_transaction = False
        self.processed = 0

    def _abort(self) -> None:
        """Drop the transaction's output and read its input again from the committed offsets."""
        self.producer.abort_transaction(60)
        self.in_transaction = False
        self.processed = 0
        assigned = self.consumer.assignment()
        if assigned:
            for tp in self.consumer.committed(assigned, 30):
                self.consumer.seek(TopicPartition(tp.topic, tp.partition,
                                                  tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))

    def _on_revoke(self, consumer, partitions) -> None:
        # the partitions' next owner starts from the committed offsets, so uncommitted work is dropped
        if self.in_transaction:
            self.producer.abort_transaction(60)
            self.in_transaction = False
            self.processed = 0


def process(args) -> None:
    create_topics(args.bootstrap, args.partitions)
    processor = Processor(args)
    signal.signal(signal.SIGTERM, lambda *_: setattr(processor, "stopping", True))
    signal.signal(signal.SIGINT, lambda *_: setattr(processor, "stopping", True))
    print("processing", flush=True)
    processor.run()
    print("stopped", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--partitions", type=int, default=3, help="partitions of topics this creates")
    commands = parser.add_subparsers(dest="command", required=True)
    orders = commands.add_parser("orders", help="write sample orders")
    orders.add_argument("--count", type=int, default=1000)
    orders.add_argument("--start", type=int, default=0, help="first order number")
    processor = commands.add_parser("process", help="run the exactly-once processor")
    processor.add_argument("--group", default="order-processor")
    processor.add_argument("--transactional-id", default="order-processor-1")
    processor.add_argument("--commit-interval-ms", type=int, default=100)
    processor.add_argument("--session-timeout-ms", type=int, default=45000, help="classic protocol only")
    processor.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    args = parser.parse_args(argv)
    write_orders(args) if args.command == "orders" else process(args)


if __name__ == "__main__":
    sys.exit(main())
