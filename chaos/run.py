"""Weir's chaos campaign (``make chaos``; issue 35): clients under faults, then a checker.

    python -m chaos.run [--seconds 600] [--out bench/results] [--seed N]

Transactional producers on librdkafka, on Weir's client and on the Java client write to
``chaos-in``, at transaction version 1 for the first half of the run and 2 for the second
(chaos/versions.py); consume-transform-produce workers (Weir's ``GroupTransactSession``) copy it,
in a classic group to ``chaos-out`` and in a KIP-848 group to ``chaos-out-848``, with their offsets
committed in the same transactions; share group members consume it too (chaos/share.py).
Meanwhile the nemesis (chaos/nemesis.py) kills the broker -9 and restarts it, pauses it, arms
storms of retriable errors, fills its disk, kills clients -9 and, with ``--fuse`` (the data
directory on the FUSE test filesystem, the broker flushing every message), slows the disk and
cuts the power; a killed or failed client is started again.
At the end the faults are healed, the producers stop, the workers and the share group drain the
input, and the checker (chaos/checker.py) reads everything back. It prints the count of every
anomaly class and the first examples, writes ``chaos-<date>.json`` and a chart of committed
records per second with the faults marked (``chaos-<date>.svg``) to ``--out``, and exits 1 when
any anomaly was found.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from reference.kafka import java_command
from weir.testing import ProcessBroker
from weir.testing.settings import free_port

from . import share, versions
from .checker import OUTPUTS, check, offsets
from .nemesis import KINDS, ON_THE_FUSE_DISK, Nemesis
from .report import chart, throughput
from .share import drained as share_drained
from .worker import INPUT, PARTITIONS, PIPELINES, TXN_TIMEOUT_MS

BROKER_SETTINGS = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
                   "group.initial.rebalance.delay.ms": 0,
                   # a killed KIP-848 worker's partitions move on within seconds, as the classic ones do
                   "group.consumer.min.session.timeout.ms": 6000, "group.consumer.session.timeout.ms": 6000,
                   "group.consumer.min.heartbeat.interval.ms": 500, "group.consumer.heartbeat.interval.ms": 1000,
                   # and a killed share worker's records come back within seconds, and the member leaves
                   "group.share.min.record.lock.duration.ms": 5000, "group.share.record.lock.duration.ms": 10000,
                   "group.share.min.session.timeout.ms": 6000, "group.share.session.timeout.ms": 6000,
                   "group.share.min.heartbeat.interval.ms": 500, "group.share.heartbeat.interval.ms": 1000}
#: With power cuts (the FUSE disk) the broker flushes every message: the contract under which every
#: acknowledged write survives a power cut, the one the checker's "lost" class holds it to.
FLUSHED = {"log.flush.interval.messages": 1}

JAVA_PRODUCER = "dev.weir.reference.chaos.ChaosProducer"
STOP_TIMEOUT_S = 90


class Supervisor:
    """The client processes, each started again (same name: same transactional id) when it ends."""

    def __init__(self, run_dir: Path, bootstrap: str, kinds: dict[str, int]):
        self.run_dir, self.bootstrap = run_dir, bootstrap
        self.names = [(kind, f"{kind}-{n}") for kind, count in kinds.items() for n in range(count)]
        self.processes: dict[str, subprocess.Popen] = {}
        self.restarts = 0
        self.lock = threading.Lock()
        self.stopped: set[str] = set()
        self._watching = threading.Event()

    def _spawn(self, kind: str, name: str) -> None:
        log = (self.run_dir / f"{name}.log").open("a")
        arguments = [name, str(self.run_dir), self.bootstrap]
        command = (java_command(JAVA_PRODUCER, *arguments) if kind == "java"
                   else [sys.executable, "-m", "chaos.worker", kind, *arguments])
        self.processes[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                cwd=Path(__file__).parents[1])

    def start(self) -> None:
        for kind, name in self.names:
            self._spawn(kind, name)
        self._watching.set()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while self._watching.is_set():
            with self.lock:
                for kind, name in self.names:
                    if name not in self.stopped and self.processes[name].poll() is not None:
                        self.restarts += 1
                        self._spawn(kind, name)
            time.sleep(0.2)  # a poll of the children: they end on their own schedule

    def kill_one(self, rng: random.Random) -> str:
        with self.lock:
            _kind, name = rng.choice(self.names)
            self.processes[name].kill()
            return name

    def stop(self, kind: str) -> None:
        """SIGTERM to every client of ``kind``: each finishes its transaction and exits."""
        with self.lock:
            names = [name for k, name in self.names if k == kind]
            self.stopped.update(names)
        for name in names:
            self.processes[name].send_signal(signal.SIGTERM)
        for name in names:
            try:
                self.processes[name].wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.processes[name].kill()

    def close(self) -> None:
        self._watching.clear()
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()


def set_share_group_configs(bootstrap: str) -> None:
    """The share group's settings before its first member joins (IncrementalAlterConfigs on the group)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.GROUP, share.SHARE_GROUP, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in share.GROUP_CONFIGS.items()])
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: the future dies with its client
    admin.incremental_alter_configs([resource])[resource].result(30)


def drained(bootstrap: str, timeout_s: float, quiet_s: float = 5.0) -> bool:
    """Whether the group's committed offsets stood still for ``quiet_s`` (the workers found nothing
    more to copy) within ``timeout_s``. Not "committed == last stable offset": the marker that ends
    the last transaction takes an offset of its own, which no consumer position passes."""
    deadline = time.monotonic() + timeout_s
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        _lso, _hw, committed = asyncio.run(offsets(bootstrap))
        if committed != last:
            last, since = committed, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return True
        time.sleep(1.0)  # the workers commit on their own schedule
    return False


def campaign(seconds: float, out: Path, seed: int, kinds: tuple[str, ...], clients: dict[str, int],
             fuse: bool) -> int:
    rng = random.Random(seed)
    run_dir = Path(tempfile.mkdtemp(prefix="weir-chaos-"))
    started = datetime.datetime.now(datetime.UTC)
    with ExitStack() as mounts:
        disk = None
        if fuse:
            from tests.support.power import LazyMount
            disk = mounts.enter_context(LazyMount(run_dir / "disk"))
        else:
            kinds = tuple(kind for kind in kinds if kind not in ON_THE_FUSE_DISK)
        return _campaign(seconds, out, rng, seed, kinds, clients, run_dir, started, disk)


def _campaign(seconds: float, out: Path, rng: random.Random, seed: int, kinds: tuple[str, ...],
              clients: dict[str, int], run_dir: Path, started: datetime.datetime, disk) -> int:
    data_dir = (disk.mountpoint if disk is not None else run_dir) / "data"
    metrics = f"127.0.0.1:{free_port()}"  # the request counters say which transaction versions ran
    settings = {**BROKER_SETTINGS, **(FLUSHED if disk is not None else {}), "metrics.listener": metrics}
    phases: list[dict[str, Any]] = []
    with ProcessBroker(settings, data_dir=data_dir, args=versions.broker_args()) as broker:
        for topic in (INPUT, *OUTPUTS):
            broker.create_topic(topic, partitions=PARTITIONS)
        set_share_group_configs(broker.bootstrap_servers)
        if clients.get("java"):
            java_command(JAVA_PRODUCER)  # builds the Java programs first if they changed (reference/kafka.py)
        supervisor = Supervisor(run_dir, broker.bootstrap_servers, clients)
        nemesis = Nemesis(broker, supervisor.kill_one, rng, kinds, disk)
        supervisor.start()
        try:
            begun = time.monotonic()
            gap = max(2.5, min(6.0, seconds / 12))  # longest pause between faults: a short run meets every kind
            deadline = begun + seconds
            phases.append({"t": 0.0, "transaction.version": versions.FIRST})
            while time.monotonic() < deadline:
                time.sleep(min(rng.uniform(2, gap), max(deadline - time.monotonic(), 0)))  # between faults
                if len(phases) == 1 and time.monotonic() - begun >= seconds / 2:
                    phases[0]["requests_since_last_broker_start"] = versions.requests_by_version(metrics)
                    versions.upgrade(broker)
                    # clients read the level from ApiVersions when they connect: a restart makes every
                    # one reconnect now, so the second half runs version 2 whatever the faults are
                    broker.kill()
                    broker.restart()
                    phases.append({"t": round(time.monotonic() - begun, 2), "transaction.version": versions.SECOND})
                    print(phases[-1], flush=True)
                if time.monotonic() < deadline:
                    nemesis.strike()
                    print(f"{nemesis.applied[-1]}", flush=True)
            nemesis.heal()
            for kind in ("rdkafka", "weir", "java"):
                supervisor.stop(kind)
            drained(broker.bootstrap_servers, 180, quiet_s=15)
            phases[-1]["requests_since_last_broker_start"] = versions.requests_by_version(metrics)
            if clients.get("share"):
                lso, _hw, _groups = asyncio.run(offsets(broker.bootstrap_servers))
                share_drained(broker.bootstrap_servers, INPUT, lso[INPUT], 180, quiet_s=30)
            for kind in (*PIPELINES, "share"):
                supervisor.stop(kind)
        finally:
            supervisor.close()
        result = check(broker.bootstrap_servers, run_dir, settle_timeout_s=2 * TXN_TIMEOUT_MS / 1000 + 30)
        (run_dir / "broker.log").write_text(broker.log)  # for the examples' story; the clients' logs are there too
    anomalies, inputs, outputs = result.anomalies, result.inputs, result.outputs
    report = {
        "date": started.isoformat(timespec="seconds"), "seconds": seconds, "seed": seed, "clients": clients,
        "fuse_disk": disk is not None,
        "pipelines": PIPELINES, "transaction_versions": phases,
        "transactions_by_version": versions.journal_versions(run_dir), "share_group": share.GROUP_CONFIGS,
        "faults": nemesis.applied, "client_restarts": supervisor.restarts,
        "records": {"input": len(inputs), **{topic: len(reads) for topic, reads in outputs.items()},
                    "unprocessed_input": result.unprocessed, **result.share},
        "anomalies": anomalies.counts, "examples": anomalies.examples,
        "throughput": throughput(inputs, outputs, started.timestamp()), "run_dir": str(run_dir),
    }
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"chaos-{started:%Y-%m-%d}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    chart(report, stem.with_suffix(".svg"))
    print(f"{len(nemesis.applied)} faults, {supervisor.restarts} client restarts, "
          f"{len(inputs)} input records committed, outputs {[len(reads) for reads in outputs.values()]}")
    for name, count in anomalies.counts.items():
        print(f"  {name:26} {count}" + (f"   first: {anomalies.examples[name][:2]}" if count else ""))
    if result.unprocessed:
        print(f"  the workers left {result.unprocessed} committed input records uncopied (liveness)")
    if result.share:
        print(f"  share group: {result.share}")
    print(f"report: {stem}.json, {stem}.svg")
    undecided = result.share.get("share_unprocessed", 0) + result.share.get("share_unjudged", 0)
    return 1 if anomalies.total or result.unprocessed or undecided else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("CHAOS_SECONDS", 600)))
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--faults", default=",".join(KINDS), help=f"of {', '.join(KINDS)}")
    parser.add_argument("--fuse", action="store_true",
                        help="the data directory on the FUSE test filesystem, for slow_disk (root, /dev/fuse)")
    parser.add_argument("--rdkafka", type=int, default=2, help="librdkafka transactional producers")
    parser.add_argument("--weir", type=int, default=2, help="Weir client transactional producers")
    parser.add_argument("--java", type=int, default=1, help="Java client transactional producers")
    parser.add_argument("--ctp", type=int, default=2, help="consume-transform-produce workers, classic group")
    parser.add_argument("--ctp848", type=int, default=1, help="consume-transform-produce workers, KIP-848 group")
    parser.add_argument("--share", type=int, default=2, help="share group consumers (Weir client)")
    args = parser.parse_args(argv)
    kinds = tuple(kind for kind in args.faults.split(",") if kind)
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)}")
    print(f"chaos: {args.seconds:.0f} s, seed {args.seed}, faults {', '.join(kinds)}", flush=True)
    return campaign(args.seconds, args.out, args.seed, kinds,
                    {"rdkafka": args.rdkafka, "weir": args.weir, "java": args.java, "ctp": args.ctp,
                     "ctp848": args.ctp848, "share": args.share}, args.fuse)


if __name__ == "__main__":
    sys.exit(main())
