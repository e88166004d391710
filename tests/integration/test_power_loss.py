"""Power loss, on a filesystem that loses what was not fsynced (tests/support/lazyfs.py).

A transactional load (tests/integration/power_load.py, librdkafka) runs against the broker; at a
random moment the broker is killed and the power cut: every write not fsynced is dropped,
but for a random prefix of each file's unsynced writes, the last torn. The broker restarts
on what is left, and a read_committed consumer checks what the load was told:

- with ``log.flush.interval.messages=1`` everything acknowledged survives: each acks=all
  record at its offset, each committed transaction whole (its records, through its markers
  and ``__transaction_state``), each committed offset, transactional or plain;
- at the defaults (nothing fsynced before a roll or a clean shutdown) an acknowledged write
  may be lost, as the README says, but each partition keeps a prefix of its log: what
  survives is what was acknowledged, at the same offsets, with no gap.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import threading
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from tests.broker_process import REPO, BrokerProcess
from tests.integration.power_load import ORDER_PARTITIONS, RECORDS_PER_TXN, TXN_ID
from tests.support.power import LazyMount
from tests.support.topics import create_topic
from tests.support.waiting import wait_until

CUTS = 8
SMALL_INTERNAL_TOPICS = {"offsets.topic.num.partitions": "4", "transaction.state.log.num.partitions": "4"}
TORN = re.compile(r"truncating (\d+) torn bytes")


class Load:
    """One run of power_load.py; its acknowledgements, read as they come."""

    def __init__(self, bootstrap: str, round_: int):
        self.process = subprocess.Popen([sys.executable, "-m", "tests.integration.power_load", bootstrap, str(round_)],
                                        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.split())

    def commits(self) -> int:
        return sum(1 for line in list(self.lines) if line[0] == "commit")

    def kill(self) -> list[list[str]]:
        self.process.kill()
        self.process.wait(10)
        self.reader.join(10)
        return self.lines


def read_all(bootstrap: str, topic: str, partitions: int) -> dict[tuple[int, int], str]:
    """Every record of ``topic`` a read_committed consumer gets, by (partition, offset)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "power-verify", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    marks = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), 10) for p in range(partitions)}
    ends = {p: high for p, (low, high) in marks.items() if high > low}  # empty ones: nothing to read
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    found: dict[tuple[int, int], str] = {}

    def caught_up() -> bool:
        for message in consumer.consume(500, 0.2):
            if message.error() is None:
                found[(message.partition(), message.offset())] = message.value().decode()
        positions = consumer.position([TopicPartition(topic, p) for p in ends])
        return all(tp.offset >= ends[tp.partition] for tp in positions)
    wait_until(caught_up, f"a read_committed consumer reads {topic} to its end {ends}")
    consumer.close()
    return found


def committed_offset(bootstrap: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    offset = consumer.committed([TopicPartition("input", 0)], 10)[0].offset
    consumer.close()
    return offset


def fence_open_transaction(bootstrap: str) -> None:
    """Abort the transaction the cut left open (an InitProducerId fences it), so the LSO moves."""
    Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID}).init_transactions(30)


def start(data_dir, overrides) -> BrokerProcess:
    # A power cut is a reboot: recovery checks every CRC again (broker/log/restart_points.py, BOOT_ID_FILE).
    (data_dir.parent.parent / "boot_id").write_text(str(uuid.uuid4()))
    return BrokerProcess(data_dir, overrides={**SMALL_INTERNAL_TOPICS, **overrides},
                         env={"WEIR_BOOT_ID_FILE": str(data_dir.parent.parent / "boot_id")}).start(timeout=60)


def test_everything_acknowledged_survives_power_cuts_with_a_flush_per_message(tmp_path):
    rng = random.Random()
    seed = rng.randrange(2**32)
    rng.seed(seed)
    overrides = {"log.flush.interval.messages": "1"}
    acknowledged: dict[tuple[int, int], str] = {}
    committed_txns: list[str] = []
    eos_offset = plain_offset = 0
    torn_bytes = dropped_writes = 0
    with LazyMount(tmp_path / "lazy") as lazy:
        data_dir = lazy.mountpoint / "data"
        broker = start(data_dir, overrides)
        for name, partitions in (("orders", ORDER_PARTITIONS), ("plain", 2), ("input", 1)):
            create_topic(broker.bootstrap, name, partitions)
        try:
            for cut in range(CUTS):
                load = Load(broker.bootstrap, cut)
                wait_until(lambda load=load: load.commits() >= 1 or load.process.poll() is not None,
                           "the load commits a transaction", timeout=60)
                time.sleep(rng.uniform(0, 1.5))  # the power goes at a random point of the load
                broker.kill()
                counts = lazy.cut(rng.randrange(1, 2**31))
                dropped_writes += counts["writes_dropped"]
                for line in load.kill():
                    if line[0] == "commit":
                        committed_txns.append(line[1])
                        eos_offset = max(eos_offset, int(line[2]))
                    elif line[0] == "ack":
                        acknowledged[(int(line[1]), int(line[2]))] = line[3]
                    elif line[0] == "offset":
                        plain_offset = max(plain_offset, int(line[1]))
                broker = start(data_dir, overrides)
                torn_bytes += sum(int(m.group(1)) for line in broker.lines if (m := TORN.search(line)))

                fence_open_transaction(broker.bootstrap)
                orders = read_all(broker.bootstrap, "orders", ORDER_PARTITIONS)
                values = sorted(orders.values())
                assert len(values) == len(set(values)), "no record twice"
                missing = {f"{txn}-{i}" for txn in committed_txns for i in range(RECORDS_PER_TXN)} - set(values)
                assert not missing, f"records of committed transactions lost at cut {cut} (seed {seed})"
                plain = read_all(broker.bootstrap, "plain", 2)
                lost = {key: value for key, value in acknowledged.items() if plain.get(key) != value}
                assert not lost, f"acknowledged records lost or moved at cut {cut} (seed {seed})"
                assert committed_offset(broker.bootstrap, "power-eos") >= eos_offset
                assert committed_offset(broker.bootstrap, "power-plain") >= plain_offset
        finally:
            broker.kill()
    print(f"power cuts: {CUTS}, transactions committed: {len(committed_txns)}, acknowledged records: "
          f"{len(committed_txns) * RECORDS_PER_TXN + len(acknowledged)}, committed offsets: eos {eos_offset}, "
          f"plain {plain_offset}; unsynced writes dropped: {dropped_writes}, torn bytes cut at recovery: "
          f"{torn_bytes}; lost: 0 (seed {seed})")
    assert len(committed_txns) >= CUTS


def test_at_the_defaults_a_power_cut_loses_at_most_a_tail_of_each_partition(tmp_path):
    """What the README says of the defaults: acknowledged writes may be lost, but each partition
    keeps a prefix of its log, every survivor at the offset it was acknowledged at."""
    rng = random.Random()
    seed = rng.randrange(2**32)
    rng.seed(seed)
    acknowledged: dict[tuple[int, int], str] = {}
    survived = lost = 0
    with LazyMount(tmp_path / "lazy") as lazy:
        data_dir = lazy.mountpoint / "data"
        broker = start(data_dir, {})
        for name, partitions in (("orders", ORDER_PARTITIONS), ("plain", 2), ("input", 1)):
            create_topic(broker.bootstrap, name, partitions)
        try:
            for cut in range(3):
                load = Load(broker.bootstrap, cut)
                wait_until(lambda load=load: load.commits() >= 1 or load.process.poll() is not None,
                           "the load commits a transaction", timeout=60)
                time.sleep(rng.uniform(0, 1.0))
                broker.kill()
                lazy.cut(rng.randrange(1, 2**31))
                for line in load.kill():
                    if line[0] == "ack":
                        acknowledged[(int(line[1]), int(line[2]))] = line[3]
                broker = start(data_dir, {})
                plain = read_all(broker.bootstrap, "plain", 2)
                for partition in range(2):
                    offsets = sorted(offset for p, offset in plain if p == partition)
                    assert offsets == list(range(len(offsets))), "a prefix: no gap"
                wrong = {key: value for key, value in acknowledged.items() if key in plain and plain[key] != value}
                assert not wrong, f"a surviving record at another offset (seed {seed})"
                gone = {key for key in acknowledged if key not in plain}
                survived, lost = len(acknowledged) - len(gone), len(gone)
                for key in gone:  # the next round writes at those offsets again
                    del acknowledged[key]
        finally:
            broker.kill()
    print(f"defaults: acknowledged records that survived the last cut {survived}, lost {lost} (seed {seed})")


def test_a_clean_shutdown_at_the_defaults_makes_everything_durable(tmp_path):
    """At the defaults nothing is fsynced before a roll, but a clean shutdown makes every write durable.
    On ext4 one syncfs does it; on FUSE (this filesystem) a syncfs does not reach the daemon, so the
    broker fsyncs each file instead: a power cut right after the shutdown loses nothing."""
    with LazyMount(tmp_path / "lazy") as lazy:
        data_dir = lazy.mountpoint / "data"
        broker = start(data_dir, {})
        try:
            create_topic(broker.bootstrap, "plain", 2)
            producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 5})
            for number in range(2000):
                producer.produce("plain", f"record {number}".encode(), partition=number % 2)
            assert producer.flush(30) == 0
            assert broker.stop() == 0
            lazy.cut(random.randrange(1, 2**31))
            broker = start(data_dir, {})
            survivors = read_all(broker.bootstrap, "plain", 2)
        finally:
            broker.kill()
    assert sorted(survivors.values()) == sorted(f"record {number}" for number in range(2000))


def test_an_open_with_o_trunc_empties_a_file_on_the_test_filesystem(tmp_path):
    # libfuse3 leaves O_TRUNC to the filesystem: the lazy one once ignored it, and a rewrite of the
    # aborted-transaction index appended to the old contents (duplicated aborts in the chaos campaign)
    with LazyMount(tmp_path / "mnt") as mount:
        path = mount.mountpoint / "file"
        path.write_bytes(b"x" * 100)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            assert os.lseek(fd, 0, os.SEEK_END) == 0
            os.write(fd, b"y" * 10)
        finally:
            os.close(fd)
        assert path.read_bytes() == b"y" * 10
        path.write_bytes(b"z" * 3)  # open(..., "wb"): O_CREAT | O_TRUNC on an existing file
        assert path.read_bytes() == b"zzz"
