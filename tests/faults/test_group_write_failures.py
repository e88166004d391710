"""A KIP-848 member whose session expired while the disk was full (its removal could not be
written; the coordinator reloaded the group from its log) expires again once writes succeed, so
its partitions move on. Found by the chaos campaign: the reloaded member had no session timer
and held its partitions for good."""

from __future__ import annotations

import subprocess
import sys

from confluent_kafka import Consumer

import weir
from tests.support.waiting import wait_until

SETTINGS = {"group.consumer.min.session.timeout.ms": 3000, "group.consumer.session.timeout.ms": 3000,
            "group.consumer.min.heartbeat.interval.ms": 500, "group.consumer.heartbeat.interval.ms": 500}
MEMBER = """
import sys
from confluent_kafka import Consumer
consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "g", "group.protocol": "consumer"})
consumer.subscribe([sys.argv[2]])
while True:
    consumer.poll(0.2)
    if consumer.assignment():
        print("assigned", flush=True)
"""


def test_a_member_whose_removal_failed_to_write_expires_again():
    with weir.run_broker(SETTINGS) as broker:
        topic = broker.create_topic("held", partitions=2)
        member = subprocess.Popen([sys.executable, "-c", MEMBER, broker.bootstrap_servers, topic],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert member.stdout.readline().strip() == "assigned"
            broker.disk_full()
            member.kill()  # no LeaveGroup: its session runs out while the disk is full
            member.wait()
            wait_until(lambda: broker.log_contains("record(s) failed; reloading it"), "the removal's write to fail",
                       timeout=60)
            broker.disk_ok()
        finally:
            if member.poll() is None:
                member.kill()
        successor = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                              "group.protocol": "consumer"})
        successor.subscribe([topic])
        def both_partitions() -> bool:
            successor.poll(0.2)
            return len(successor.assignment()) == 2
        try:
            wait_until(both_partitions, "the successor to get both partitions", timeout=60, interval=0)
        finally:
            successor.close()
