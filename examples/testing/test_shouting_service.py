"""Tests of shouting_service.py, written as a Weir user writes them: with the pytest plugin's
``weir_broker`` and ``weir_topic`` fixtures, and ``weir.run_broker()`` for a broker of the
test's own that it can kill -9. After a crash of the service or of the broker, every line
has exactly one shout under read_committed: no loss, no repeat."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import confluent_kafka

import weir
from weir.client import Producer

import shouting_service  # this folder is on sys.path (pytest's rootdir-relative import of the test module)

SERVICE = Path(__file__).with_name("shouting_service.py")
PARTITIONS = 3
DEADLINE_S = 90


def line(number: int) -> bytes:
    return b"line-%d" % number


class Feeder(threading.Thread):
    """Writes lines at a steady pace until stopped (idempotent, so retries across a broker
    restart write each line once): the service always has input when it is killed."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.written = 0
        self.failures: list = []
        self.stopping = threading.Event()

    def run(self) -> None:
        producer = confluent_kafka.Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True,
                                             "linger.ms": 5})
        while not self.stopping.wait(0.02):
            for _ in range(10):
                producer.produce(self.topic, line(self.written), key=b"%d" % self.written,
                                 on_delivery=lambda error, _message: error and self.failures.append(error))
                self.written += 1
            producer.poll(0)
        if producer.flush(DEADLINE_S):
            self.failures.append("not all lines were delivered")

    def finish(self) -> int:
        self.stopping.set()
        self.join(DEADLINE_S + 10)
        assert not self.is_alive() and not self.failures, self.failures
        return self.written


class ServiceProcess:
    """shouting_service.py as its own process, its output kept in a file for failure messages."""

    def __init__(self, bootstrap: str, source: str, sink: str, log: Path):
        self.log = log
        with log.open("a") as output:
            self.process = subprocess.Popen(
                [sys.executable, str(SERVICE), "--bootstrap", bootstrap, "--source", source, "--sink", sink,
                 "--group", f"{sink}-group", "--transactional-id", f"{sink}-service"],
                stdout=output, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(DEADLINE_S) == 0, self.log.read_text()


def read_shouts(bootstrap: str, topic: str, at_least: int = 0) -> list[bytes]:
    """Committed shouts, read from the beginning to the end of every partition, and on until
    there are ``at_least`` of them (within DEADLINE_S)."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                                         "isolation.level": "read_committed", "enable.partition.eof": True,
                                         "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                     for p in range(PARTITIONS)])
    shouts, at_end = [], set()
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(at_end) < PARTITIONS or len(shouts) < at_least:
            assert time.monotonic() < deadline, f"{len(shouts)} shouts of at least {at_least} in {DEADLINE_S} s"
            message = consumer.poll(1)
            if message is None:
                continue
            if message.error():
                assert message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF, message.error()
                at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            shouts.append(message.value())
    finally:
        consumer.close()
    return shouts


def assert_exactly_once(shouts: list[bytes], written: int) -> None:
    assert len(shouts) == written, f"{len(shouts)} shouts for {written} lines"
    assert sorted(shouts) == sorted(line(n).upper() for n in range(written))


async def test_shouts_each_line_once(weir_broker, weir_topic):
    """The service in the test's own event loop, on the session's broker."""
    source, sink = weir_topic(partitions=PARTITIONS), weir_topic(partitions=PARTITIONS)
    async with Producer(weir_broker.bootstrap_servers) as producer:
        for number in range(200):
            await producer.send(source, line(number), b"%d" % number)
        await producer.flush()
    stop = asyncio.Event()
    service = asyncio.create_task(shouting_service.run(
        weir_broker.bootstrap_servers, source, sink, group=f"{sink}-group", transactional_id=f"{sink}-service",
        stop=stop))
    # a blocking client reads in a thread: the service runs on this loop
    await asyncio.to_thread(read_shouts, weir_broker.bootstrap_servers, sink, 200)
    stop.set()
    await service
    assert_exactly_once(await asyncio.to_thread(read_shouts, weir_broker.bootstrap_servers, sink), 200)


def test_service_killed_mid_stream(weir_broker, weir_topic, tmp_path):
    bootstrap = weir_broker.bootstrap_servers
    source, sink = weir_topic(partitions=PARTITIONS), weir_topic(partitions=PARTITIONS)
    feeder = Feeder(bootstrap, source)
    feeder.start()
    service = ServiceProcess(bootstrap, source, sink, tmp_path / "service.log")
    try:
        read_shouts(bootstrap, sink, at_least=100)
        service.kill()  # lines keep coming, so it dies mid-stream, most likely in a transaction
        service = ServiceProcess(bootstrap, source, sink, tmp_path / "service.log")
        read_shouts(bootstrap, sink, at_least=feeder.written + 100)
        written = feeder.finish()
        read_shouts(bootstrap, sink, at_least=written)
        service.stop()
    finally:
        feeder.stopping.set()
        if service.process.poll() is None:
            service.kill()
    assert_exactly_once(read_shouts(bootstrap, sink), written)


def test_broker_killed_mid_stream(tmp_path):
    """A broker of the test's own (not the session's), so that killing it disturbs no other test."""
    with weir.run_broker() as broker:
        bootstrap = broker.bootstrap_servers
        source = broker.create_topic("lines", partitions=PARTITIONS)
        sink = broker.create_topic("shouts", partitions=PARTITIONS)
        feeder = Feeder(bootstrap, source)
        feeder.start()
        service = ServiceProcess(bootstrap, source, sink, tmp_path / "service.log")
        try:
            shouted = len(read_shouts(bootstrap, sink, at_least=100))
            broker.kill()  # kill -9 under the running service and feeder
            broker.restart()
            read_shouts(bootstrap, sink, at_least=shouted + 100)
            written = feeder.finish()
            read_shouts(bootstrap, sink, at_least=written)
            service.stop()
        finally:
            feeder.stopping.set()
            if service.process.poll() is None:
                service.kill()
        assert_exactly_once(read_shouts(bootstrap, sink), written)
