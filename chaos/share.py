"""Share groups in the chaos campaign (KIP-932): the share worker, its acknowledgement log, and the
check of "a share record accepted twice or lost".

A share worker (``python -m chaos.worker share NAME RUN_DIR BOOTSTRAP``) consumes ``chaos-in`` in
the share group ``chaos-share`` (read_committed, from the earliest offset, delivery limit 10) with
Weir's ``ShareConsumer`` in explicit mode. For each fetch it appends to ``RUN_DIR/NAME.shares``
(JSON lines, flushed: a kill -9 of the process keeps them, the machine does not lose power):

- ``start`` when a consumer instance starts (a new member: what the last one held comes back);
- ``got`` for every record handed out, with the broker's delivery count, before acknowledging;
- ``ack`` (the intent: each record's ACCEPT, or on purpose a RELEASE of a first delivery or a
  REJECT) before the acknowledgements are sent;
- ``acked`` once ShareAcknowledge answered no error for every partition: the broker took them all.

What these logs can prove, and so what the check (``check_shares``) counts, for each committed
input record (read_committed, chaos/checker.py):

- ``share_accepted_twice``: two ``acked`` terminal acknowledgements (ACCEPT or REJECT) of the same
  record. Only confirmed ones count: a correct broker takes at most one, since a record once
  ACKNOWLEDGED or ARCHIVED is never acquired again and an acknowledgement of an acquisition the
  member lost (lock expired, member gone) is refused. An ``ack`` without ``acked`` may or may not
  have been applied (the worker died, or the answer was an error), so it is never counted twice.
- ``share_lost``: the broker finished the record (below the share-partition start offset from
  DescribeShareGroupOffsets, once every worker stopped) but no worker ever intended to ACCEPT or
  REJECT it. Since every intent is logged before it is sent, such a record was finished by the
  broker on its own; the one legal way is the delivery limit (archived after its 10th delivery).
  Logged deliveries are known; unlogged ones are bounded: a consumer instance fetches only once it
  handed out (and logged) everything of its last fetch, so each instance can hide at most one
  delivery of a record -- the fetch in flight or buffered when it ended -- and only if it ended
  after the record was written (its CreateTime). So a record is ``share_lost`` only when logged
  deliveries + instances that ended after its timestamp < the limit: no false positive. Records
  the bound cannot rule on (finished with no intent, yet the limit could have been reached) are
  ``share_unjudged`` in the report and fail the run as liveness does (a correct broker has none
  unless a record really met ten deliveries, and only the first delivery is ever released on
  purpose), so a long run, whose many instances weaken the bound for its early records, cannot
  hide a record the broker finished on its own.
- A record handed out that is not a committed input is an ``aborted_read`` (its producer saw its
  transaction abort) or an ``uncommitted_read`` (any other): the group reads read_committed.
- A committed input at or past the start offset after the drain is liveness
  (``share_unprocessed``), which fails the run as the pipelines' unprocessed input does.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

SHARE_GROUP = "chaos-share"
DELIVERY_LIMIT = 10
GROUP_CONFIGS = {"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed",
                 "share.delivery.count.limit": str(DELIVERY_LIMIT)}
RELEASE_SHARE, REJECT_SHARE = 0.03, 0.01
TERMINAL = ("accept", "reject")


class AckLog:
    def __init__(self, run_dir: Path, name: str):
        self._file = (run_dir / f"{name}.shares").open("a")
        self.write([{"e": "start", "at": time.time()}])

    def write(self, entries: list[dict[str, Any]]) -> None:
        self._file.write("".join(json.dumps(entry) + "\n" for entry in entries))
        self._file.flush()  # in the page cache before anything is sent: a kill -9 keeps it


def choose(delivery_count: int) -> str:
    draw = random.random()
    if draw < REJECT_SHARE:
        return "reject"
    if delivery_count == 1 and draw < REJECT_SHARE + RELEASE_SHARE:
        return "release"  # first deliveries only: a release never brings a record near the limit
    return "accept"


async def next_fetch(consumer: Any, stop: asyncio.Event) -> list[Any] | None:
    """The records of the consumer's next fetch (None once ``stop`` is set): the first may wait for
    a fetch; the rest of that fetch's records are handed out from its buffer without a request."""
    first = asyncio.ensure_future(anext(consumer))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({first, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not first.done():
        first.cancel()  # the end of this instance: what that fetch acquired goes back with the session
        return None
    batch = [first.result()]
    while consumer._buffer:  # the one way to know a fetch's records are all handed out
        batch.append(await anext(consumer))
    return batch


async def run_share(name: str, run_dir: Path, bootstrap: str) -> int:
    import signal

    from weir.client.errors import KafkaException
    from weir.client.share import ShareConsumer

    from .worker import INPUT

    stop = asyncio.Event()  # SIGTERM: the acknowledgements of the fetch under way go out, then close
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    log = AckLog(run_dir, name)
    consumer = ShareConsumer(INPUT, bootstrap_servers=bootstrap, group_id=SHARE_GROUP,
                             acknowledgement_mode="explicit", max_records=100)
    batches = 0
    try:
        async with consumer:
            while (batch := await next_fetch(consumer, stop)) is not None:
                batches += 1
                kinds = [choose(record.delivery_count) for record in batch]
                log.write([{"e": "got", "p": r.partition, "o": r.offset, "n": r.delivery_count,
                            "v": json.loads(r.value or b"null")} for r in batch]
                          + [{"e": "ack", "b": batches, "acks": [[r.partition, r.offset, kind]
                                                                 for r, kind in zip(batch, kinds, strict=True)]}])
                for record, kind in zip(batch, kinds, strict=True):
                    consumer.acknowledge(record, kind)
                await consumer.commit()
                if not consumer._pending:  # all sent (none kept back for a new share session)
                    log.write([{"e": "acked", "b": batches}])
    except (KafkaException, OSError) as exc:
        print(f"{name}: {exc!r}", flush=True)
        return 3
    return 0


# ---------------------------------------------------------------------------------------- reading


def start_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """The share group's start offset per partition of ``topic`` (DescribeShareGroupOffsets)."""
    from weir.protocol.api_keys import ApiKey
    from weir.protocol.messages import describe_share_group_offsets as dsgo

    from tests.features.raw import ask

    broker = SimpleNamespace(port=int(bootstrap.rsplit(":", 1)[1]), kind="weir")
    answer = ask(broker, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, dsgo.REQUEST(groups=[
        dsgo.RequestGroup(group_id=SHARE_GROUP, topics=None)])).groups[0]
    if answer.error_code:
        raise RuntimeError(f"DescribeShareGroupOffsets: error {answer.error_code}")
    return {p.partition_index: p.start_offset for t in answer.topics if t.topic_name == topic for p in t.partitions}


def drained(bootstrap: str, topic: str, ends: dict[int, int], timeout_s: float, quiet_s: float) -> bool:
    """Whether the start offsets reached ``ends`` or stood still ``quiet_s`` (longer than a lock)."""
    deadline = time.monotonic() + timeout_s
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        offsets = start_offsets(bootstrap, topic)
        if all(offsets.get(p, -1) >= end for p, end in ends.items()):
            return True
        if offsets != last:
            last, since = offsets, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return False
        time.sleep(1.0)  # the workers acknowledge on their own schedule
    return False


def key_of(partition: int, offset: int) -> int:
    return partition << 48 | offset  # one int per record: the logs of a 10-minute run name millions


@dataclass
class ShareLogs:
    deliveries: Counter[int]  # record key -> "got" entries
    intended: set[int]  # records some worker meant to ACCEPT or REJECT
    confirmed: Counter[int]  # record key -> ACCEPTs and REJECTs the broker took
    foreign: list[dict[str, Any]]  # "got" entries of records that are not committed inputs
    instance_ends: list[float]  # sorted upper bounds of when each consumer instance ended (wall clock)
    sent: Counter[str] = field(default_factory=Counter)  # acknowledgements meant, by kind (for the report)


def read_logs(run_dir: Path, committed: set[int], ended_by: float) -> ShareLogs:
    logs = ShareLogs(Counter(), set(), Counter(), [], [])
    for path in sorted(run_dir.glob("*.shares")):
        starts: list[float] = []
        sent: dict[int, list[list[Any]]] = {}  # batch -> its acknowledgements, until "acked"
        for line in path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line cut by kill -9
            if entry["e"] == "start":
                starts.append(entry["at"])
            elif entry["e"] == "got":
                key = key_of(entry["p"], entry["o"])
                logs.deliveries[key] += 1
                if key not in committed:
                    logs.foreign.append(entry)
            elif entry["e"] == "ack":
                sent[entry["b"]] = entry["acks"]
                logs.sent.update(kind for _p, _o, kind in entry["acks"])
                logs.intended.update(key_of(p, o) for p, o, kind in entry["acks"] if kind in TERMINAL)
            elif entry["e"] == "acked":
                logs.confirmed.update(key_of(p, o) for p, o, kind in sent.pop(entry["b"]) if kind in TERMINAL)
        # an instance ended no later than the next one of the same worker started, or than the check
        logs.instance_ends.extend(starts[1:] + [ended_by])
    logs.instance_ends.sort()
    return logs


def check_shares(inputs: list[Any], logs: ShareLogs, start: dict[int, int], outcome: dict[tuple[str, int], str],
                 anomalies: Any) -> dict[str, int]:
    """The share classes into ``anomalies``; returns the figures (unjudged, unprocessed)."""
    figures = {"share_unjudged": 0, "share_unprocessed": 0, "share_instances": len(logs.instance_ends),
               "share_deliveries": logs.deliveries.total(),
               **{f"share_{kind}_sent": logs.sent[kind] for kind in ("accept", "release", "reject")}}
    for read in inputs:
        key = key_of(read.partition, read.offset)
        where = {"partition": read.partition, "offset": read.offset}
        if logs.confirmed[key] > 1:
            anomalies.add("share_accepted_twice", {**where, "confirmed_terminal_acks": logs.confirmed[key]})
        if read.offset >= start.get(read.partition, -1):
            figures["share_unprocessed"] += 1
        elif key not in logs.intended:
            logged = logs.deliveries[key]
            hidden = len(logs.instance_ends) - bisect.bisect_left(logs.instance_ends, read.timestamp_ms / 1000)
            if logged + hidden < DELIVERY_LIMIT:
                anomalies.add("share_lost", {**where, "deliveries_logged": logged, "instances_after": hidden,
                                             "start_offset": start.get(read.partition)})
            else:
                figures["share_unjudged"] += 1
    for entry in logs.foreign:
        value = entry["v"]
        kind = "aborted_read" if outcome.get((value["w"], value["t"])) == "abort" else "uncommitted_read"
        anomalies.add(kind, {"share_delivery": [entry["p"], entry["o"]], "producer": value["w"], "txn": value["t"]})
    return figures
