"""The chaos campaign's checker: reads everything back once every client stopped and classifies
anomalies, in the spirit of Elle/Jepsen (each class is a property of the history that any
correct Kafka keeps; zero is the expected count of every one).

From the producers' journals (chaos/worker.py) and the topics read from the beginning:

- ``lost``: a record of a transaction its producer saw commit is not in ``chaos-in`` (read_committed);
- ``duplicate``: a (producer, sequence) twice in ``chaos-in``, or one input record's output twice in
  an output topic (each consume-transform-produce pipeline of chaos/worker.py has its own);
- ``aborted_read``: a record of a transaction its producer saw abort, under read_committed;
- ``uncommitted_read``: a transaction only partly visible under read_committed (some of its records
  and not the rest: a reader saw data of a transaction that was not committed as a whole);
- ``out_of_order``: a producer's sequences not increasing along a partition;
- ``offsets_without_outputs``: an input record below the group's committed offset with no output;
- ``outputs_without_offsets``: an output for an input record at or past the committed offset, or for
  an input that is not there under read_committed;
- ``hanging_transaction``: a partition whose last stable offset stays below its high watermark after
  every client stopped and the transaction timeout (and its abort sweep) passed;
- ``share_accepted_twice`` and ``share_lost``: the share group's classes, with what the share
  workers' acknowledgement logs can and cannot prove (chaos/share.py says why they give no false
  positive); a share delivery of a record that is not a committed input is an aborted or
  uncommitted read.

``lost`` is the durability contract: an acknowledged write survives a broker kill -9 (the page
cache keeps it) and, when the campaign cuts the power (``power_cut``, on the FUSE disk), the broker
runs with ``log.flush.interval.messages=1``, under which Kafka's contract (and Weir's: see
tests/integration/test_power_loss.py) is that every acknowledged write survives a power cut too.
At the default flush settings a power cut may lose acknowledged data legitimately, and no check
could tell that from a broker bug, so the campaign never cuts power without flushing per message.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from .share import check_shares, key_of, read_logs, start_offsets
from .worker import INPUT, PARTITIONS, PIPELINES

OUTPUTS = tuple(output for _group, output, _protocol in PIPELINES.values())

CLASSES = ("lost", "duplicate", "aborted_read", "uncommitted_read", "out_of_order", "offsets_without_outputs",
           "outputs_without_offsets", "hanging_transaction", "share_accepted_twice", "share_lost")
EXAMPLES_KEPT = 5


@dataclass
class Anomalies:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    examples: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in CLASSES})

    def add(self, kind: str, example: Any) -> None:
        self.counts[kind] += 1
        if len(self.examples[kind]) < EXAMPLES_KEPT:
            self.examples[kind].append(example)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class Read:
    partition: int
    offset: int
    timestamp_ms: int
    value: Any


def read_topic(bootstrap: str, topic: str, ends: dict[int, int], deadline_s: float = 120.0) -> list[Read]:
    """Every record of ``topic`` under read_committed, up to ``ends`` (partition -> offset)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"chaos-checker-{topic}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    reads: list[Read] = []
    done = {p for p, end in ends.items() if end == 0}
    deadline = time.monotonic() + deadline_s
    try:
        while len(done) < PARTITIONS:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic}: partitions {sorted(set(range(PARTITIONS)) - done)} unfinished")
            message = consumer.poll(0.5)
            if message is not None and not message.error():  # errors: _PARTITION_EOF; positions tell
                reads.append(Read(message.partition(), message.offset(), message.timestamp()[1],
                                  json.loads(message.value())))
                if message.offset() + 1 >= ends[message.partition()]:
                    done.add(message.partition())
            for position in consumer.position([TopicPartition(topic, p) for p in range(PARTITIONS)]):
                if position.offset >= ends[position.partition]:
                    done.add(position.partition)
    finally:
        consumer.close()
    return reads


Offsets = dict[str, dict[int, int]]  # topic or group -> partition -> offset


async def offsets(bootstrap: str) -> tuple[Offsets, Offsets, Offsets]:
    """Last stable offsets and high watermarks per topic, and each group's committed offsets on the input."""
    from weir.client import Admin
    from weir.client.admin import LATEST
    from weir.client.types import TopicPartition as Tp

    async with Admin(bootstrap) as admin:
        lso: dict[str, dict[int, int]] = {}
        hw: dict[str, dict[int, int]] = {}
        for topic in (INPUT, *OUTPUTS):
            specs = {Tp(topic, p): LATEST for p in range(PARTITIONS)}
            lso[topic] = {tp.partition: o for tp, o in (await admin.list_offsets(specs, read_committed=True)).items()}
            hw[topic] = {tp.partition: o for tp, o in (await admin.list_offsets(specs)).items()}
        groups: Offsets = {}
        for group, _output, _protocol in PIPELINES.values():
            committed = await admin.list_group_offsets(group, [Tp(INPUT, p) for p in range(PARTITIONS)])
            groups[group] = {tp.partition: found.offset for tp, found in committed.items()}
    return lso, hw, groups


def settle(bootstrap: str, timeout_s: float, anomalies: Anomalies) -> tuple[Offsets, Offsets]:
    """Wait for every partition's LSO to reach its high watermark; the ones that do not are hanging."""
    deadline = time.monotonic() + timeout_s
    while True:
        lso, hw, group = asyncio.run(offsets(bootstrap))
        stuck = [(topic, p, lso[topic][p], hw[topic][p]) for topic in hw for p in hw[topic]
                 if lso[topic][p] < hw[topic][p]]
        if not stuck or time.monotonic() > deadline:
            for topic, partition, stable, high in stuck:
                anomalies.add("hanging_transaction", {"topic": topic, "partition": partition, "lso": stable,
                                                      "high_watermark": high})
            return lso, group
        time.sleep(1.0)  # the coordinator's abort sweep runs on its own interval


def journals(run_dir: Path) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[tuple[str, int], str]]:
    """Transactions begun (by (producer, txn)) and the outcomes their producers saw."""
    begun: dict[tuple[str, int], dict[str, Any]] = {}
    outcome: dict[tuple[str, int], str] = {}
    for path in sorted(run_dir.glob("*.journal")):
        name = path.stem
        for line in path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line cut by kill -9
            if entry["e"] == "begin":
                begun[(name, entry["txn"])] = entry
            else:
                outcome[(name, entry["txn"])] = entry["e"]
    return begun, outcome


def check_inputs(reads: Iterable[Read], begun: dict[tuple[str, int], dict[str, Any]],
                 outcome: dict[tuple[str, int], str], anomalies: Anomalies) -> None:
    seen: dict[tuple[str, int], Read] = {}
    by_txn: dict[tuple[str, int], set[int]] = defaultdict(set)
    last: dict[tuple[str, int], Read] = {}
    for read in reads:
        writer, txn, seq = read.value["w"], read.value["t"], read.value["s"]
        where = {"partition": read.partition, "offset": read.offset, "producer": writer, "txn": txn, "seq": seq}
        if (writer, seq) in seen:
            anomalies.add("duplicate", {**where, "first_offset": seen[(writer, seq)].offset})
        seen[(writer, seq)] = read
        by_txn[(writer, txn)].add(seq)
        if outcome.get((writer, txn)) == "abort":
            anomalies.add("aborted_read", where)
        previous = last.get((writer, read.partition))
        if previous is not None and previous.value["s"] > seq:  # equal: a duplicate, counted as such
            anomalies.add("out_of_order", {**where, "after_seq": previous.value["s"], "after_offset": previous.offset})
        last[(writer, read.partition)] = read
    for key, entry in begun.items():
        wanted = set(range(entry["first"], entry["first"] + entry["count"]))
        visible = by_txn.get(key, set())
        if outcome.get(key) == "commit" and wanted - visible:
            anomalies.add("lost", {"producer": key[0], "txn": key[1], "partition": entry["partition"],
                                   "missing_seqs": sorted(wanted - visible)[:10]})
        elif visible and wanted - visible and outcome.get(key) != "commit":
            anomalies.add("uncommitted_read", {"producer": key[0], "txn": key[1], "partition": entry["partition"],
                                               "visible": len(visible), "of": len(wanted)})


def check_outputs(inputs: list[Read], outputs: list[Read], committed: dict[int, int], anomalies: Anomalies) -> None:
    present = {(read.partition, read.offset) for read in inputs}
    produced: dict[tuple[int, int], Read] = {}
    for read in outputs:
        source = tuple(read.value["src"])
        if source in produced:
            anomalies.add("duplicate", {"output_partition": read.partition, "output_offset": read.offset,
                                        "source": list(source), "first_output_offset": produced[source].offset})
        produced[source] = read  # type: ignore[index]
        if source not in present or source[1] >= committed.get(source[0], 0):
            anomalies.add("outputs_without_offsets", {"output_partition": read.partition,
                                                      "output_offset": read.offset, "source": list(source),
                                                      "committed": committed.get(source[0], 0)})
    for read in inputs:
        if read.offset < committed.get(read.partition, 0) and (read.partition, read.offset) not in produced:
            anomalies.add("offsets_without_outputs", {"partition": read.partition, "offset": read.offset,
                                                      "committed": committed[read.partition]})


@dataclass
class Outcome:
    anomalies: Anomalies
    inputs: list[Read]
    outputs: dict[str, list[Read]]  # by output topic
    unprocessed: int  # committed inputs at or past a group's committed offsets (not an anomaly: liveness)
    share: dict[str, int]  # share_unprocessed (liveness, as unprocessed) and share_unjudged (chaos/share.py)


def check(bootstrap: str, run_dir: Path, settle_timeout_s: float) -> Outcome:
    anomalies = Anomalies()
    lso, committed = settle(bootstrap, settle_timeout_s, anomalies)
    inputs = read_topic(bootstrap, INPUT, lso[INPUT])
    begun, outcome = journals(run_dir)
    check_inputs(inputs, begun, outcome, anomalies)
    outputs, unprocessed = {}, 0
    for group, output, _protocol in PIPELINES.values():
        outputs[output] = read_topic(bootstrap, output, lso[output])
        check_outputs(inputs, outputs[output], committed[group], anomalies)
        unprocessed += sum(1 for read in inputs if read.offset >= committed[group].get(read.partition, 0))
    share = {}
    if any(run_dir.glob("*.shares")):
        logs = read_logs(run_dir, {key_of(read.partition, read.offset) for read in inputs}, time.time())
        share = check_shares(inputs, logs, start_offsets(bootstrap, INPUT), outcome, anomalies)
    return Outcome(anomalies, inputs, outputs, unprocessed, share)
