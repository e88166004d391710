"""Broker CPU per request at fixed request shapes: the latency benchmark's load-independent twin.

bench/latency.py's percentiles on a shared machine move by 2-10x between rounds (the broker's
loop waits for a CPU far longer than it runs), and the clients' batching changes with the
broker's speed, so neither says whether a change made Weir cheaper. This one fixes the shapes:
``--rounds-per-run`` times, a Produce of ``--records`` records of ``--size`` bytes (acks=all,
v9) on one connection, then a Fetch of that batch (v12, one partition) on another, one request
at a time. Reported per peer: broker CPU (user + system, /proc) per produce-and-fetch round in
microseconds, and the wall time of a round (noisy on a busy machine, like every wall time).

    python -m bench.request_cost [--rounds-per-run 3000] [--records 5] [--size 1024]
                                 [--rounds 3] [--peers weir,kafka]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import fetch, produce
from weir.protocol.records import Record, encode_batch

from bench.throughput import compare, cpu_seconds, create_topic

WARM_UP_ROUNDS = 300
TOPIC = "request-cost"


def _round_trip(sock: socket.socket, codec: ClientConnection, request: bytes):
    sock.sendall(request)
    while True:
        data = sock.recv(1 << 20)
        if not data:
            raise RuntimeError("the broker closed the connection")
        answers = codec.receive_data(data)
        if answers:
            return answers[0]


def run(broker, args) -> dict:
    create_topic(broker.bootstrap, TOPIC, 1)
    batch = encode_batch([Record(os.urandom(args.size), timestamp=int(time.time() * 1000))
                          for _ in range(args.records)])
    producing, fetching = ClientConnection("request-cost-producer"), ClientConnection("request-cost-consumer")
    address = ("127.0.0.1", broker.port)
    with socket.create_connection(address) as producer, socket.create_connection(address) as consumer:
        for sock in (producer, consumer):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def one_round() -> None:
            answer = _round_trip(producer, producing, producing.send_request(ApiKey.PRODUCE, 9, produce.REQUEST(
                acks=-1, timeout_ms=30_000, topic_data=[produce.TopicData(name=TOPIC, partition_data=[
                    produce.PartitionData(index=0, records=batch)])])))
            written = answer.responses[0].partition_responses[0]
            if written.error_code:
                raise RuntimeError(f"produce failed with error {written.error_code}")
            answer = _round_trip(consumer, fetching, fetching.send_request(ApiKey.FETCH, 12, fetch.REQUEST(
                max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, topics=[fetch.FetchTopic(topic=TOPIC, partitions=[
                    fetch.FetchPartition(partition=0, fetch_offset=written.base_offset,
                                         partition_max_bytes=1 << 20)])])))
            if len(answer.responses[0].partitions[0].records or b"") < len(batch):
                raise RuntimeError("the fetch did not return the batch just produced")

        for _ in range(WARM_UP_ROUNDS):
            one_round()
        cpu_before, began = cpu_seconds(broker.process.pid), time.monotonic()
        for _ in range(args.rounds_per_run):
            one_round()
        cpu = cpu_seconds(broker.process.pid) - cpu_before
        wall = time.monotonic() - began
    return {"broker CPU us per round": cpu / args.rounds_per_run * 1e6,
            "wall us per round": wall / args.rounds_per_run * 1e6,
            "load (1 min)": os.getloadavg()[0]}


def main(argv=None) -> int:
    from bench.peers import add_arguments
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds-per-run", type=int, default=3000)
    parser.add_argument("--records", type=int, default=5)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    add_arguments(parser)
    parser.set_defaults(peers="weir,kafka")
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    compare(run, args, f"Produce of {args.records} x {args.size} B (acks=all) then Fetch of it, one at a time")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
