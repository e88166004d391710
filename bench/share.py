"""Share groups (KIP-932) as a job queue: records acknowledged per second by 1, 4 and 16 members
on 1 and 6 partitions, and end-to-end latency, Weir next to Apache Kafka 4.4 in the same run.

    python -m bench.share [--records 20000] [--members 1,4,16] [--partitions 1,6] [--work-ms 1]
                          [--rate 500] [--seconds 10] [--latency-members 4] [--rounds 3] [--peers weir,kafka]

Every member is a confluent-kafka ``ShareConsumer`` (librdkafka, the same client on both brokers,
implicit acknowledgement) in a thread of this process: it reads each record's value and works
``--work-ms`` on it (a sleep: a job's I/O), and its next poll accepts what it was handed.

- Throughput: the members join and wait until each holds its share of the partitions (the
  group's description says so); then ``--records`` records of 1 KiB are produced, dealt out evenly
  over the partitions, and the members share them out. The time runs from the first record a
  member gets to the last member's final ``commit_sync``, so the group's forming is not counted;
  records/s is the records over that time.
- Latency: ``--latency-members`` members wait on an empty topic; a producer sends ``--rate``
  records a second for ``--seconds``, each carrying its send time; the latency is the time from
  the send to the member's poll returning it (p50, p99).

Each round starts each peer afresh (bench/peers.py); the share group's ``share.auto.offset.reset``
is set to earliest, since a new share group starts at the end of its topics. Small sizes (the
``make`` profile: ``--records 400 --seconds 2 --rounds 1``) only show that it runs: figures of a
loaded machine are not a quiet machine's.

Measured 2026-11-28 on a quiet machine (nothing else running, load 0.3-0.9), ``--records 10000
--rounds 2``, Weir against Kafka 4.4.0, records/s: 1 member 1 partition 858 / 863 (0.99x), 4 on 1
2,055 / 2,096 (0.98x), 16 on 1 2,039 / 2,070 (0.98x), 1 on 6 847 / 862 (0.98x), 4 on 6 2,337 /
2,369 (0.99x), 16 on 6 6,028 / 6,229 (0.97x); end-to-end p50 0.8 / 0.8 ms, p99 1.5 / 12.5 ms. The
16-on-6 case was 0.66x before Weir's share assignor took Kafka 4.4's sharing rule (every partition
read by ceil(16/6) = 3 members: 18 readers where Weir had 16) and stickiness, and before this
benchmark dealt its records out evenly (a keyless librdkafka producer had left partitions empty).
What was left was how the records were handed out: a poll takes whole producer batches (~950
records, ~1 s of work), and ``--trace`` prints each member's polls (when, how many, from which
partition). On one partition the in-flight window (``share.partition.max.record.locks``, 2,000)
holds three such batches, so three members work at a time and the others wait. Kafka runs a
ShareFetch's acknowledgements beside its fetch: the acknowledging member's fetch finds the window
still full and waits behind the others, and the room goes to the fetch that waited longest (its
purgatory's watch order): 4 on 1 hands out 3/3/3/2 batches. Weir wrote the acknowledgements and
then fetched, so the acknowledging member took the room every time (4 on 1: 4/4/3/0, one member
never got a record), and a start moved by an acknowledgement woke nobody. Weir now does as Kafka
(broker/handlers/share_fetch.py), and like Kafka 4.4 starts each fetch of several partitions at
the one its session epoch picks (round robin). 16 on 6 hands each batch to a different member on
both (12 batches: a member's time is one batch); its earlier count (Kafka 16 polls of 625 records)
came from the producer's batches, which differ by broker and run, not from the hand-out.

After that change, quiet machine (2026-11-28 11:13 UTC, nothing else running, load 0.4-1.0),
``--records 10000 --rounds 2``, Weir / Kafka 4.4.0 records/s: 1 on 1 840 / 852 (0.99x; round 2 850
/ 850: one member is bound by its own 1 ms a record), 4 on 1 2,072 / 2,059 (1.01x), 16 on 1 2,068 /
2,060 (1.00x), 1 on 6 852 / 852 (1.00x), 4 on 6 2,344 / 2,323 (1.01x), 16 on 6 5,524 / 5,744
(0.96x); end-to-end p50 0.8 / 1.7 ms, p99 3.1 / 21.7 ms. 16 on 6 swings most (which member ends
up with a second batch is the producer's batching luck, on both brokers), so it ran again alone,
``--members 16 --partitions 6 --rounds 6 --seconds 2``: Weir median 6,140 (4,764-6,360), Kafka
5,891 (4,908-6,052), 1.04x; p99 3.1 / 68.3 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import struct
import sys
import threading
import time
import uuid

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from bench.latency import percentiles
from bench.throughput import compare, create_topic

SIZE = 1024
STAMP = struct.Struct(">q")  # the send time (ns since the epoch) at the head of a latency record
DEADLINE_S = 600


def set_earliest(bootstrap: str, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)


class Members:
    """``count`` share consumers of one group, each in its own thread, working on what they get."""

    def __init__(self, bootstrap: str, topic: str, group: str, count: int, work_s: float,
                 on_record=lambda _value, _received_ns: None):
        self.received = 0
        self.first_ns: int | None = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.polls: list[tuple[int, int, dict[int, int]]] = []  # (member, received ns, records by partition)
        self.threads = [threading.Thread(target=self._member, args=(bootstrap, topic, group, n, work_s, on_record),
                                         daemon=True) for n in range(count)]
        for thread in self.threads:
            thread.start()

    def _member(self, bootstrap, topic, group, number, work_s, on_record) -> None:
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"bench-{number}",
                                  "log_level": 3})
        consumer.subscribe([topic])
        try:
            while not self.stop.is_set():
                batch = consumer.poll(0.1)
                received_ns = time.time_ns()
                if batch:
                    by_partition: dict[int, int] = {}
                    for message in batch:
                        if not message.error():
                            by_partition[message.partition()] = by_partition.get(message.partition(), 0) + 1
                    with self.lock:
                        self.polls.append((number, received_ns, by_partition))
                for message in batch:
                    if message.error():
                        continue
                    value = message.value()
                    on_record(value, received_ns)
                    if work_s:
                        time.sleep(work_s)
                    with self.lock:
                        self.received += 1
                        if self.first_ns is None:
                            self.first_ns = received_ns
            consumer.commit_sync(30)  # accepts the last poll's records
        except BaseException as exc:  # noqa: BLE001 -- reported by finish()
            self.errors.append(exc)
        finally:
            consumer.close()

    def wait_for(self, records: int) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while self.received < records:
            if time.monotonic() > deadline or self.errors:
                raise RuntimeError(f"{self.received} of {records} records received; errors: {self.errors[:1]}")
            time.sleep(0.01)  # a poll of the members' counter, bounded by the deadline

    def finish(self) -> int:
        """Stop every member after its final commit; the time it ended (ns)."""
        self.stop.set()
        for thread in self.threads:
            thread.join(60)
        if self.errors:
            raise RuntimeError(f"a member failed: {self.errors[0]!r}")
        return time.time_ns()


def produce(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    payload = os.urandom(SIZE)
    for i in range(records):
        while True:
            try:
                # dealt out evenly (a keyless record goes where librdkafka's sticky partitioner is
                # for a while, which leaves some partitions without records in a short run)
                producer.produce(topic, payload, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120):
        raise RuntimeError("records left unsent")


def throughput(bootstrap: str, partitions: int, members: int, args) -> float:
    run = uuid.uuid4().hex[:8]
    topic, group = f"share-bench-{partitions}p-{members}m-{run}", f"share-bench-{run}"
    create_topic(bootstrap, topic, partitions)
    set_earliest(bootstrap, group)
    group_members = Members(bootstrap, topic, group, members, args.work_ms / 1000)
    try:
        asyncio.run(group_formed(bootstrap, group, topic, members, partitions))
        produce(bootstrap, topic, args.records, partitions)
        group_members.wait_for(args.records)
    finally:
        ended = group_members.finish()
    assert group_members.first_ns is not None
    if args.trace:
        print_polls(group_members, members, f"{members} member(s) on {partitions} partition(s)")
    return args.records / ((ended - group_members.first_ns) / 1e9)


def print_polls(group_members: Members, members: int, case: str) -> None:
    """Each member's polls: when (ms after the first record), how many records from which partitions."""
    first = group_members.first_ns or 0
    print(f"-- {case}: {len(group_members.polls)} polls", flush=True)
    for number in range(members):
        polls = [(ns, parts) for member, ns, parts in group_members.polls if member == number]
        shown = " ".join(f"{(ns - first) // 1_000_000}ms:" + "+".join(f"p{p}x{n}" for p, n in sorted(parts.items()))
                         for ns, parts in polls)
        records = sum(sum(p.values()) for _, p in polls)
        print(f"   member {number:2}: {records:5} records in {len(polls)} polls  {shown}", flush=True)


async def group_formed(bootstrap: str, group: str, topic: str, members: int, partitions: int) -> None:
    """Until every member holds its share of the partitions at the group's assignment epoch, so that
    the throughput case times the group at work, not its forming."""
    from weir.client import Admin
    from weir.client.errors import KafkaException
    deadline = time.monotonic() + DEADLINE_S
    async with Admin(bootstrap) as admin:
        while True:
            try:
                [group_now] = (await admin.describe_share_groups([group])).values()
            except KafkaException:  # GROUP_ID_NOT_FOUND until the first member's heartbeat
                group_now = None
            if group_now is not None and len(group_now.members) == members and all(
                    m.assignment and m.member_epoch == group_now.assignment_epoch for m in group_now.members) and (
                    {tp.partition for m in group_now.members for tp in m.assignment} == set(range(partitions))):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the share group did not form: {group_now}")
            await asyncio.sleep(0.1)  # a poll of the group's description, bounded by the deadline


def latency(bootstrap: str, args) -> dict[str, float]:
    run = uuid.uuid4().hex[:8]
    topic, group = f"share-latency-{run}", f"share-latency-{run}"
    create_topic(bootstrap, topic, 1)
    set_earliest(bootstrap, group)
    latencies_us: list[int] = []

    def on_record(value: bytes, received_ns: int) -> None:
        sent_ns = STAMP.unpack_from(value)[0]
        if sent_ns:  # 0: a probe sent while the members were joining
            latencies_us.append((received_ns - sent_ns) // 1000)

    group_members = Members(bootstrap, topic, group, args.latency_members, args.work_ms / 1000, on_record)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    padding = os.urandom(SIZE - STAMP.size)
    try:
        probes = 0
        while group_members.received == 0:  # until the members are assigned and served
            producer.produce(topic, STAMP.pack(0) + padding)
            producer.flush(10)
            probes += 1
            if group_members.errors:
                raise RuntimeError(f"a member failed: {group_members.errors[0]!r}")
            time.sleep(0.05)  # probes at 20/s while the group forms
        group_members.wait_for(probes)
        records = int(args.rate * args.seconds)
        began = time.monotonic()
        for i in range(records):
            delay = began + i / args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # the send schedule of a steady rate
            producer.produce(topic, STAMP.pack(time.time_ns()) + padding)
            producer.poll(0)
        producer.flush(60)
        group_members.wait_for(probes + records)
    finally:
        group_members.finish()
    quantiles = percentiles(latencies_us)
    return {"e2e p50 ms": quantiles["p50"], "e2e p99 ms": quantiles["p99"]}


def run(broker, args) -> dict:
    figures: dict[str, float | str] = {}
    for partitions in args.partition_counts:
        for members in args.member_counts:
            figures[f"{members} member(s) {partitions}p records/s"] = throughput(broker.bootstrap, partitions,
                                                                                 members, args)
    figures.update(latency(broker.bootstrap, args))
    figures["load (1 min)"] = os.getloadavg()[0]
    return figures


def bench_results(argv=None) -> dict:
    """The run ``main`` prints, its figures returned (``summarise``): for bench/report.py."""
    from bench.peers import add_arguments
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000, help="records of 1 KiB per throughput case")
    parser.add_argument("--members", default="1,4,16")
    parser.add_argument("--partitions", default="1,6")
    parser.add_argument("--work-ms", type=float, default=1.0, help="work per record (a sleep)")
    parser.add_argument("--rate", type=int, default=500, help="records/s of the latency run")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the latency run")
    parser.add_argument("--latency-members", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trace", action="store_true", help="print each member's polls (records, partitions, time)")
    add_arguments(parser)
    parser.set_defaults(peers="weir,kafka")
    args = parser.parse_args(argv)
    args.member_counts = [int(n) for n in args.members.split(",")]
    args.partition_counts = [int(n) for n in args.partitions.split(",")]
    print(f"load average at start: {os.getloadavg()}", flush=True)
    summary = compare(run, args, f"share group, records of {SIZE} B, {args.work_ms:g} ms of work each, "
                                 f"{args.records} records a throughput case, latency at {args.rate}/s "
                                 f"with {args.latency_members} members")
    print(f"load average at end: {os.getloadavg()}")
    return summary


def main(argv=None) -> int:
    bench_results(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
