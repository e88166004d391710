"""Streams-group (KIP-1071) rebalance cost: a third member joins two on a 12-task topology (one
stateless subtopology reading a 12-partition topic), on Weir and on Apache Kafka 4.4.0.

The members speak StreamsGroupHeartbeat over the wire (our codec), each in its own thread at the
group's heartbeat interval (0.5 s: tests/reference/kafka.py's settings on both brokers), and take
what they are given at once (a Streams instance would first close or open its tasks): so the
figure is the coordinator's part of a rebalance, its steps times the interval, not Streams' task
start-up. Measured from the newcomer's join until the three hold 4 tasks each (complete and
disjoint): the time, and the tasks the first two gave up on the way.

    python -m bench.rebalance_streams [--brokers weir,kafka] [--rounds 3]

Measured 2026-11-28 on a quiet machine (nothing else running, load 0.3), 3 rounds, medians: Weir
1.01 s and 4 tasks moved, Kafka 4.4.0 1.02 s and 4 tasks moved (the minimum: each of the two
gives up two of its six). Both brokers take two heartbeat intervals: the newcomer's join, then
the revocations acknowledged.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import threading
import time
import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import find_coordinator, streams_group_heartbeat as hb

from .rebalance import start_broker, wait_for

TASKS, MEMBERS, INTERVAL = 12, 2, 0.5


class StreamsMember(threading.Thread):
    def __init__(self, port: int, group: str, topic: str):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.codec = ClientConnection("bench-streams")
        self.group, self.topic, self.member_id = group, topic, str(uuid.uuid4())
        self.epoch, self.owned, self.gave_up = 0, set(), 0
        self.joined_at = 0.0
        self.stopping = threading.Event()

    def _ask(self, request, api_key=ApiKey.STREAMS_GROUP_HEARTBEAT, version=1):
        self.sock.sendall(self.codec.send_request(api_key, version, request))
        while True:
            answers = self.codec.receive_data(self.sock.recv(1 << 16))
            if answers:
                return answers[0]

    def _beat(self):
        joining = self.epoch == 0
        topology = hb.Topology(epoch=1, subtopologies=[hb.Subtopology(
            subtopology_id="0", source_topics=[self.topic], source_topic_regex=[], state_changelog_topics=[],
            repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])
        owned = [hb.TaskIds(subtopology_id="0", partitions=sorted(self.owned))] if self.owned else []
        answer = self._ask(hb.REQUEST(
            group_id=self.group, member_id=self.member_id, member_epoch=self.epoch, endpoint_information_epoch=0,
            rebalance_timeout_ms=30000 if joining else -1, topology=topology if joining else None,
            process_id=self.member_id if joining else None, active_tasks=owned, standby_tasks=[], warmup_tasks=[]))
        if answer.error_code in (14, 15, 16):  # Kafka still loading __consumer_offsets: again next interval
            return
        if answer.error_code:
            raise RuntimeError(f"heartbeat: error {answer.error_code} {answer.error_message}")
        self.epoch = answer.member_epoch
        if answer.active_tasks is not None:
            given = {p for t in answer.active_tasks for p in t.partitions}
            self.gave_up += len(self.owned - given)
            self.owned = given

    def find_coordinator(self):
        """Kafka creates __consumer_offsets when a coordinator is first looked up."""
        while self._ask(find_coordinator.REQUEST(key_type=0, coordinator_keys=[self.group]), ApiKey.FIND_COORDINATOR,
                        4).coordinators[0].error_code:
            time.sleep(0.2)  # a poll interval while Kafka loads the partition

    def run(self):
        self.find_coordinator()
        self.joined_at = time.monotonic()
        while not self.stopping.is_set():
            self._beat()
            self.stopping.wait(INTERVAL)
        self.epoch = -1
        self._ask(hb.REQUEST(group_id=self.group, member_id=self.member_id, member_epoch=-1,
                             endpoint_information_epoch=0))
        self.sock.close()


def balanced(members, size):
    owned = [p for m in members for p in m.owned]
    return len(owned) == len(set(owned)) == TASKS and all(len(m.owned) == size for m in members)


def one_round(bootstrap: str) -> tuple[float, int]:
    topic, group = f"streams-rebalance-{uuid.uuid4().hex[:8]}", f"streams-rebalance-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, TASKS, 1)])[topic].result(30)
    port = int(bootstrap.rsplit(":", 1)[1])
    members = [StreamsMember(port, group, topic) for _ in range(MEMBERS)]
    for member in members:
        member.start()
    try:
        wait_for(lambda: balanced(members, TASKS // MEMBERS))
        time.sleep(1.0)  # let the group settle
        for member in members:
            member.gave_up = 0
        newcomer = StreamsMember(port, group, topic)
        members.append(newcomer)
        newcomer.start()
        wait_for(lambda: newcomer.joined_at > 0)
        wait_for(lambda: balanced(members, TASKS // (MEMBERS + 1)))
        return time.monotonic() - newcomer.joined_at, sum(m.gave_up for m in members[:MEMBERS])
    finally:
        for member in members:
            member.stopping.set()
        for member in members:
            member.join(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", default="weir,kafka")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"a 3rd streams member joins {MEMBERS} on {TASKS} tasks; median of {args.rounds} round(s)")
    for kind in args.brokers.split(","):
        bootstrap, broker = start_broker(kind)
        try:
            results = [one_round(bootstrap) for _ in range(args.rounds)]
            seconds = statistics.median(r[0] for r in results)
            moved = statistics.median(r[1] for r in results)
            print(f"{kind:6} streams (KIP-1071, sticky)   {seconds:6.2f} s  {moved:4.0f} tasks moved", flush=True)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
