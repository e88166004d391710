"""End-to-end and produce-acknowledgement latency at fixed rates: Weir next to Tansu and Kafka.

A producer and a consumer, each a process of its own (bench/latency_clients.py, librdkafka),
on a fresh single-partition topic per measurement: 1 KiB records at ``--rates`` records a
second (1,000, 10,000 and 50,000) for ``--seconds``, acks=all, linger.ms 0, idempotent.
``plain``: the consumer reads read_uncommitted; ``txn``: the producer commits every 100 ms and
the consumer reads read_committed, so end-to-end includes waiting for the commit (the last
stable offset). Reported: p50, p99, p99.9 and max in milliseconds of end-to-end (send call to
the consumer's hands) and acknowledgement (send call to delivery report) latency.

    python -m bench.latency [--rates 1000,10000,50000] [--seconds 5] [--modes plain,txn]
                            [--rounds 3] [--peers weir,tansu,kafka]

Rounds alternate the peers; each figure is the median over rounds, printed with Weir's ratios
(lower is better) and the machine's 1-minute load average during the round.

The consumer takes records one ``poll`` at a time: ``consume(n, timeout)`` waits up to its
timeout for n records, which measured librdkafka's batching (a 50 ms p50 at 10,000/s) instead of
the broker. Where Weir's tail comes from (issue 23, measured on the shared 2-core machine at
load 5-10 with a 1 ms ticker task on the broker's loop and the loop thread's
/proc/self/task/<tid>/schedstat): of 0.9-2.8 s of loop lag over a 5 s run at 10,000/s, 90-95%
was time the thread waited runnable for a CPU, the rest running; no garbage collection took
over 2 ms (gc.callbacks), so freezing the start-up heap (gc.freeze) has nothing to win here. At
50,000/s linger 0 the run is bistable on a busy machine: while the broker keeps up, batches stay
small (p50 5-12 ms); once it falls behind, librdkafka's batches grow to ~1 MB and the backlog
stays (p50 0.4-1.4 s). One single-threaded loop gets one thread's share of a crowded CPU where
Kafka's dozens of threads get more.

Measured again at 50,000/s (load 9-11, a probe timing every request from its frame's arrival to
its answer): in the bad state the broker is not what holds the backlog -- ~850 KB Produce
requests were answered in 2-3.5 ms (p50), the loop used 1-2 s of CPU in a 7 s run, and the
acknowledgement p50 (1.2-1.8 s) exceeded the end-to-end p50 (0.3-0.9 s): the records reached
the consumer long before the producing process got to their delivery reports, i.e. the Python
producer (50,000 ``produce`` calls and callbacks a second) was short of CPU. Kafka falls into
the same state on such rounds (p50 2 s seen). No fsync runs on the loop at the defaults, GC
took 5 generation-0 collections and under 2 ms in a run, so ``gc.freeze`` has nothing to win.
What the broker can do is cost less CPU per request, leaving more to the clients on a shared
machine: bench/request_cost.py measures that at fixed request shapes. A broker started with
``metrics.listener`` shows its loop's stalls as ``weir_event_loop_lag_ms``; at load 2 and
50,000/s none reached 5 ms.

Measured quiet (2026-11-26, three interleaved rounds, nothing else running, load 2.8-3.1 from the
bench's own processes): end-to-end p99 Weir / Kafka 4.3 / 40.2 ms at 1,000/s, 9.9 / 23.2 at
10,000/s, 19.2 / 34.8 at 50,000/s plain; transactional (read_committed) 100.7 / 110.7,
103.7 / 115.7, 107.0 / 112.6; acknowledgement p99 3.5 / 39.5, 9.7 / 24.1, 18.0 / 33.9. Tansu's
end-to-end p99 was 280-365 ms at every rate.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from bench.throughput import compare, create_topic

QUANTILES = (("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0))


def percentiles(latencies_us: list[int]) -> dict[str, float]:
    ordered = sorted(latencies_us)
    return {name: ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000 for name, q in QUANTILES}


def measure(bootstrap: str, topic: str, rate: int, seconds: float, size: int, mode: str) -> tuple[dict, dict]:
    create_topic(bootstrap, topic, 1)
    records = int(rate * seconds)
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "BENCH_LATENCY_READY": os.path.join(scratch, "ready")}
        command = [sys.executable, "-m", "bench.latency_clients"]
        consumer = subprocess.Popen([*command, "consume", bootstrap, topic, str(records), mode],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        producer = subprocess.run([*command, "produce", bootstrap, topic, str(rate), str(seconds), str(size), mode],
                                  capture_output=True, text=True, env=env, timeout=300)
        consumed, _ = consumer.communicate(timeout=180)
    if producer.returncode:
        raise RuntimeError(f"latency producer failed: {producer.stderr[-2000:]}")
    acks = json.loads(producer.stdout.splitlines()[-1])["latencies_us"]
    end_to_end = json.loads(consumed.splitlines()[-1])["latencies_us"]
    if len(end_to_end) < records or len(acks) < records:
        raise RuntimeError(f"{topic}: {len(acks)} acknowledged, {len(end_to_end)} consumed of {records}")
    return percentiles(end_to_end), percentiles(acks)


def run(broker, args) -> dict:
    figures = {}
    loads = []
    for mode in args.mode_names:
        for rate in args.rate_values:
            end_to_end, acks = measure(broker.bootstrap, f"latency-{mode}-{rate}", rate, args.seconds, args.size, mode)
            label = f"{mode} {rate // 1000}k rps"
            figures.update({f"{label} e2e {name} ms": value for name, value in end_to_end.items()})
            figures.update({f"{label} ack {name} ms": value for name, value in acks.items()})
            loads.append(os.getloadavg()[0])
    figures["load (1 min)"] = sum(loads) / len(loads)
    return figures


def bench_results(argv=None) -> dict:
    """The run ``main`` prints, its figures returned (``summarise``): for bench/report.py."""
    from bench.peers import add_arguments
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="1000,10000,50000")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--modes", default="plain,txn")
    parser.add_argument("--rounds", type=int, default=3)
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.rate_values = [int(rate) for rate in args.rates.split(",")]
    args.mode_names = args.modes.split(",")
    print(f"load average at start: {os.getloadavg()}", flush=True)
    summary = compare(run, args, f"records of {args.size} B for {args.seconds:g} s a rate, 1 partition, acks=all, "
                                 "linger 0")
    print(f"load average at end: {os.getloadavg()}")
    return summary


def main(argv=None) -> int:
    bench_results(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
