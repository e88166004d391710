"""One client of the chaos campaign, as a process of its own (so the campaign can kill -9 it):

    python -m chaos.worker rdkafka|weir|ctp|ctp848|share NAME RUN_DIR BOOTSTRAP

- ``rdkafka``: a transactional producer on librdkafka (confluent-kafka; transaction version 1 always);
- ``weir``: a transactional producer on Weir's client (the cluster's transaction version: 1, then 2);
- ``ctp``: consume-transform-produce on Weir's client (``GroupTransactSession``, a classic group):
  each committed input record becomes one output record naming its source partition and offset,
  with the input offsets committed in the same transaction; ``ctp848`` the same in a group of
  KIP-848's consumer protocol, to an output of its own (``PIPELINES``);
- ``share``: a member of the share group ``chaos-share`` on ``chaos-in`` (chaos/share.py).

(reference/.../chaos/ChaosProducer.java is the Java transactional producer, with the same journal.)

A producer writes transactions of 1-20 records to one random partition of ``chaos-in``, one in ten
aborted on purpose, and keeps a journal (``RUN_DIR/NAME.journal``, JSON lines): ``begin`` before a
transaction's first record, ``commit``/``abort`` once the client said so (with the transaction
version it ran at, ``tv``). A transaction with no outcome line is in doubt (the process died or
gave up): either outcome is legal for it. Record values are ``{"w": NAME, "t": txn, "s": seq}``; a
restarted producer carries on after the highest sequence its journal began, so no sequence is
written twice by design. Any error other than an
abortable one ends the process (exit 3); the campaign starts it again, and its InitProducerId
fences the old one and settles what it left open. SIGTERM: finish the transaction, then exit 0.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import sys
from pathlib import Path

INPUT = "chaos-in"
PARTITIONS = 3
TXN_TIMEOUT_MS = 10000
ABORT_SHARE = 0.1
#: consume-transform-produce kind -> (group, output topic, group protocol)
PIPELINES = {"ctp": ("chaos-ctp", "chaos-out", "classic"), "ctp848": ("chaos-ctp-848", "chaos-out-848", "consumer")}


class Journal:
    def __init__(self, run_dir: Path, name: str):
        self.path = run_dir / f"{name}.journal"
        self.txn, self.seq = 0, 0
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                entry = json.loads(line)
                if entry["e"] == "begin":
                    self.txn = max(self.txn, entry["txn"])
                    self.seq = max(self.seq, entry["first"] + entry["count"])
        self._file = self.path.open("a")

    def write(self, **entry: object) -> None:
        self._file.write(json.dumps(entry) + "\n")
        self._file.flush()  # in the page cache: a kill -9 of this process keeps it

    def begin(self, partition: int, count: int) -> tuple[int, int]:
        self.txn += 1
        first, self.seq = self.seq, self.seq + count
        self.write(e="begin", txn=self.txn, first=first, count=count, partition=partition)
        return self.txn, first


def value(name: str, txn: int, seq: int) -> bytes:
    return json.dumps({"w": name, "t": txn, "s": seq}).encode()


def plan() -> tuple[int, int, bool]:
    return random.randrange(PARTITIONS), random.randint(1, 20), random.random() < ABORT_SHARE


class RdkafkaClient:
    """librdkafka's transactional producer; its blocking calls run in a thread."""

    def __init__(self, name: str, bootstrap: str):
        from confluent_kafka import KafkaException, Producer

        self.errors: tuple[type[Exception], ...] = (KafkaException,)
        self.producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": name, "linger.ms": 5,
                                  "transaction.timeout.ms": TXN_TIMEOUT_MS,
                                  "message.timeout.ms": TXN_TIMEOUT_MS - 1000})

    async def init(self) -> None:
        await asyncio.to_thread(self.producer.init_transactions, 60)

    def begin(self) -> None:
        self.producer.begin_transaction()

    async def send(self, partition: int, data: bytes, key: bytes) -> None:
        self.producer.produce(INPUT, data, key=key, partition=partition)

    async def commit(self) -> None:
        await asyncio.to_thread(self.producer.commit_transaction, 60)

    async def abort(self) -> None:
        await asyncio.to_thread(self.producer.abort_transaction, 60)

    def abortable(self, exc: Exception) -> bool:
        return bool(exc.args[0].txn_requires_abort())

    def transaction_version(self) -> int:
        return 1  # librdkafka 2.16 has no KIP-890 (confluentinc/librdkafka#5423): version 1 at any level

    async def close(self) -> None:
        pass


class WeirClient:
    """Weir's transactional producer."""

    def __init__(self, name: str, bootstrap: str):
        from weir.client import Producer
        from weir.client.errors import KafkaException

        self.errors = (KafkaException,)
        self.producer = Producer(bootstrap, transactional_id=name, transaction_timeout_ms=TXN_TIMEOUT_MS,
                                 linger_ms=5)

    async def init(self) -> None:
        await self.producer.start()
        await self.producer.init_transactions()

    def begin(self) -> None:
        self.producer.begin_transaction()

    async def send(self, partition: int, data: bytes, key: bytes) -> None:
        await self.producer.send(INPUT, data, key, partition=partition)

    async def commit(self) -> None:
        await self.producer.commit_transaction()

    async def abort(self) -> None:
        await self.producer.abort_transaction()

    def abortable(self, exc: Exception) -> bool:
        return bool(getattr(exc, "abortable", False))

    def transaction_version(self) -> int:
        """The version the transaction ran at: the cluster's finalized level when it began (KIP-890)."""
        manager = self.producer.transaction_manager
        return manager.transaction_version if manager is not None else 0

    async def close(self) -> None:
        await self.producer.close()


async def run_producer(kind: str, name: str, run_dir: Path, bootstrap: str, stopping: list[bool]) -> int:
    journal = Journal(run_dir, name)
    client = RdkafkaClient(name, bootstrap) if kind == "rdkafka" else WeirClient(name, bootstrap)
    try:
        await client.init()
        while not stopping:
            partition, count, abort = plan()
            txn, first = journal.begin(partition, count)
            client.begin()
            version = client.transaction_version()
            try:
                for seq in range(first, first + count):
                    await client.send(partition, value(name, txn, seq), name.encode())
                if abort:
                    await client.abort()
                    journal.write(e="abort", txn=txn, tv=version)
                else:
                    await client.commit()
                    journal.write(e="commit", txn=txn, tv=version)
            except client.errors as exc:
                if not client.abortable(exc):
                    raise
                await client.abort()
                journal.write(e="abort", txn=txn, tv=version)
    except client.errors as exc:
        print(f"{name}: {exc!r}", file=sys.stderr)
        return 3
    finally:
        await client.close()
    return 0


async def run_ctp(kind: str, name: str, bootstrap: str, stopping: list[bool]) -> int:
    from weir.client import GroupTransactSession
    from weir.client.errors import KafkaException

    group, output, protocol = PIPELINES[kind]
    timeouts = dict(session_timeout_ms=6000, heartbeat_interval_ms=1000) if protocol == "classic" else {}
    session = GroupTransactSession(INPUT, bootstrap_servers=bootstrap, group_id=group, transactional_id=name,
                                   transaction_timeout_ms=TXN_TIMEOUT_MS, producer_options=dict(linger_ms=5),
                                   # a killed worker's partitions move on within seconds
                                   consumer_options=dict(group_protocol=protocol, **timeouts))
    try:
        await session.start()
        try:
            while not stopping:
                batches = await session.getmany(timeout_ms=100, max_records=200)
                for records in batches.values():
                    for record in records:
                        out = json.dumps({"src": [record.partition, record.offset],
                                          "v": json.loads(record.value or b"null")}).encode()
                        await session.send(output, out, record.key)
                if session.in_transaction:
                    await session.end()
        finally:
            await session.close()
    except KafkaException as exc:
        print(f"{name}: {exc!r}", file=sys.stderr)
        return 3
    return 0


def main(argv: list[str]) -> int:
    kind, name, run_dir, bootstrap = argv
    stopping: list[bool] = []  # non-empty once SIGTERM came
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    if kind in PIPELINES:
        return asyncio.run(run_ctp(kind, name, bootstrap, stopping))
    if kind == "share":
        from .share import run_share
        return asyncio.run(run_share(name, Path(run_dir), bootstrap))
    return asyncio.run(run_producer(kind, name, Path(run_dir), bootstrap, stopping))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
