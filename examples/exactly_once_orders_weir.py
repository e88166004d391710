"""Exactly-once order processing on Weir's own asyncio client: read an order, write its
confirmation and its inventory update atomically, together with the consumer's progress.

The same program as ``exactly_once_orders.py`` (which uses confluent-kafka), written
with ``client.GroupTransactSession``: it consumes in a group, produces in
transactions, commits the consumed offsets inside them (with the group's
generation, KIP-447, so a zombie's commit is refused), and aborts instead of
committing when a rebalance moved partitions mid-transaction. Run a broker
(``make run``), then:

    python examples/exactly_once_orders_weir.py orders --count 1000      # sample input
    python examples/exactly_once_orders_weir.py process                  # the processor

Kill the processor at any moment (even with -9) and start it again: every order
still gets exactly one confirmation and one inventory update. Read the outputs
with isolation level read_committed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from weir.client import GroupTransactSession, Producer  # noqa: E402
from weir.client.admin import Admin, NewTopic  # noqa: E402
from weir.client.errors import KafkaException, TopicAlreadyExistsError  # noqa: E402

ORDERS, CONFIRMATIONS, INVENTORY = "orders", "order-confirmations", "inventory-updates"


async def create_topics(bootstrap: str, partitions: int) -> None:
    async with Admin(bootstrap) as admin:
        for name in (ORDERS, CONFIRMATIONS, INVENTORY):
            try:
                await admin.create_topics([NewTopic(name, partitions, 1)])
            except TopicAlreadyExistsError:
                pass


def order(number: int) -> tuple[bytes, bytes]:
    """A sample order, keyed by customer so each customer's orders stay in order."""
    customer = f"customer-{number % 10}"
    body = {"order_id": number, "customer": customer, "item": f"item-{number % 7}", "quantity": 1 + number % 3}
    return customer.encode(), json.dumps(body).encode()


async def write_orders(args) -> None:
    await create_topics(args.bootstrap, args.partitions)
    async with Producer(args.bootstrap) as producer:
        deliveries = []
        for number in range(args.start, args.start + args.count):
            key, value = order(number)
            deliveries.append(await producer.send(ORDERS, value, key))
        await asyncio.gather(*deliveries)
    print(f"wrote orders {args.start}..{args.start + args.count - 1}")


async def transform(session: GroupTransactSession, message) -> None:
    placed = json.loads(message.value)
    confirmation = {"order_id": placed["order_id"], "customer": placed["customer"], "status": "confirmed"}
    update = {"order_id": placed["order_id"], "item": placed["item"], "delta": -placed["quantity"]}
    await session.send(CONFIRMATIONS, json.dumps(confirmation).encode(), message.key)
    await session.send(INVENTORY, json.dumps(update).encode(), placed["item"].encode())


async def end(session: GroupTransactSession) -> bool:
    """Commit; a timeout or an unreachable broker (a restart) is tried again, a fatal error stops us."""
    while True:
        try:
            return await session.end()
        except KafkaException as exc:
            if getattr(exc, "fatal", False):
                raise  # fenced by a newer instance with our transactional id
            print(f"ending the transaction again after {exc!r}", flush=True)
            await asyncio.sleep(0.5)


async def process(args) -> None:
    await create_topics(args.bootstrap, args.partitions)
    stopping = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stopping.set)
    if args.group_protocol == "consumer":
        # KIP-848: the broker assigns partitions and its group config (consumer.session.timeout.ms) sets
        # the session; the offsets carry the member epoch, which fences a zombie's commit. No
        # group_instance_id: a static member restarted after a crash is refused (UNRELEASED_INSTANCE_ID)
        # until its predecessor's session ends, where a new dynamic member joins at once and gets the
        # partitions when that session ends.
        membership: dict = dict(consumer_options=dict(group_protocol="consumer"))
    else:
        # a restarted processor takes its predecessor's place without a rebalance (KIP-345)
        membership = dict(group_instance_id=args.transactional_id,
                          consumer_options=dict(session_timeout_ms=args.session_timeout_ms))
    session = GroupTransactSession(
        ORDERS, bootstrap_servers=args.bootstrap, group_id=args.group, transactional_id=args.transactional_id,
        producer_options=dict(linger_ms=5), **membership)
    await session.start()  # fences a previous instance with this transactional id, aborts what it left open
    print("processing", flush=True)
    processed, started = 0, 0.0
    try:
        while not stopping.is_set():
            try:
                batches = await session.getmany(timeout_ms=50, max_records=500)
            except KafkaException as exc:  # a broker restart: the session reconnects on the next call
                if getattr(exc, "fatal", False):
                    raise
                print(f"polling again after {exc!r}", flush=True)
                await asyncio.sleep(0.5)
                continue
            for batch in batches.values():
                for message in batch:
                    if not processed:
                        started = time.monotonic()
                    await transform(session, message)
                    processed += 1
            if session.in_transaction and time.monotonic() - started >= args.commit_interval_ms / 1000:
                print(f"committed {processed}" if await end(session) else f"aborted {processed}", flush=True)
                processed = 0
        if session.in_transaction:
            print(f"committed {processed}" if await end(session) else f"aborted {processed}", flush=True)
    finally:
        await session.close()
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
    asyncio.run(write_orders(args) if args.command == "orders" else process(args))


if __name__ == "__main__":
    sys.exit(main())
