"""Mutated request frames of every API and version Weir advertises, sent to the real broker.

The corpus is recorded at test time: confluent-kafka, kafka-python and aiokafka
talk to the broker through a recording proxy, and our codec re-encodes their
requests at every other advertised version (and builds the APIs they never
send). Rounds of seeded mutations then go to the broker, each on a fresh
connection; between rounds a confluent-kafka producer and consumer make a
round trip, and at the end everything acknowledged is read back.

The broker must stay up, answer or close every connection within a deadline
(except where waiting is the protocol: long-poll Fetch, JoinGroup/SyncGroup in
a rebalance, Produce acks=0, a frame whose declared size is still to come),
never hit an unexpected exception in a handler, and keep its data.

Recorded frames differ a little from run to run (timestamps, member ids), so
the plan is a function of the seed and the corpus: the corpus is saved with
every run, and ``WEIR_FUZZ_SEED=<seed> WEIR_FUZZ_CORPUS=<file>`` replays a run
exactly (a failure prints both, and the failing frame's bytes).
``WEIR_FUZZ_MUTATIONS`` sets the count. Defects found outside the
codec/dispatcher layer and not yet fixed are listed in ``known_defects.py``.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
import random
import struct
import time
from itertools import takewhile

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.broker_process import BrokerProcess, free_port

from . import corpus as corpus_file
from .corpus import advertised_pairs, build_corpus, missing_pairs
from .known_defects import HELD_BACK, TOLERATED_ERRORS
from .mutator import SENTINEL_CORRELATION, Mutation, Mutator
from .proxy import RecordingProxy
from .workloads import record_all

SEED = int(os.environ.get("WEIR_FUZZ_SEED", "20261121"))
MUTATIONS = int(os.environ.get("WEIR_FUZZ_MUTATIONS", "3000"))
SAVED_CORPUS = os.environ.get("WEIR_FUZZ_CORPUS")
PER_PAIR = 8              # mutations of each advertised (API, version) at least
ROUNDS = 8
CONCURRENCY = 16
ANSWER_DEADLINE_S = 10.0  # a request that needs no waiting is answered or closed by then
WAIT_GRACE_S = 0.5        # how long a frame that may wait is given before the test closes it
CORPUS_TOPIC = "fuzz-corpus"
CHECK_TOPIC = "weir-fuzz-check-round-trip"
UNEXPECTED = "unexpected error handling api key"
ANSWERED, CLOSED, WAITED = "answered", "closed", "waited"
OUTCOMES = (ANSWERED, CLOSED, WAITED)
_outcomes: Counter = Counter()


async def exchange(port: int, mutation: Mutation, local_ports: dict[int, Mutation]) -> str:
    """Send one mutated frame on a fresh connection: "answered", "closed", "waited" or what went wrong."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    local_ports[writer.get_extra_info("sockname")[1]] = mutation  # the broker's log names this port
    received = bytearray()
    try:
        start = 0
        for cut in mutation.chunks + (len(mutation.wire),):
            writer.write(mutation.wire[start:cut])
            try:
                await writer.drain()  # one write per piece, so the broker may well read them apart
            except ConnectionError:
                return CLOSED  # it closed on an earlier piece
            start = cut
        deadline = WAIT_GRACE_S if mutation.may_wait else ANSWER_DEADLINE_S
        try:
            async with asyncio.timeout(deadline):
                while True:
                    chunk = await reader.read(65536)
                    if not chunk:
                        return CLOSED
                    received += chunk
                    while len(received) >= 8 and len(received) >= 4 + struct.unpack_from(">i", received)[0]:
                        correlation = struct.unpack_from(">i", received, 4)[0]
                        if not mutation.sentinel or correlation == SENTINEL_CORRELATION:
                            return ANSWERED
                        del received[:4 + struct.unpack_from(">i", received)[0]]  # the mutated frame's answer
        except TimeoutError:
            if mutation.may_wait:
                return WAITED
            return f"neither answered nor closed within {ANSWER_DEADLINE_S} s (got {bytes(received[:64]).hex()})"
        except ConnectionError:
            return CLOSED  # reset by the broker
    finally:
        writer.close()


async def send_round(port: int, mutations: list[Mutation],
                     local_ports: dict[int, Mutation]) -> list[tuple[Mutation, str]]:
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(mutation):
        async with limit:
            try:
                return mutation, await exchange(port, mutation, local_ports)
            except OSError as exc:
                return mutation, f"could not connect: {exc}"
    results = await asyncio.gather(*(one(m) for m in mutations))
    for _mutation, outcome in results:
        _outcomes[outcome if outcome in OUTCOMES else "failed"] += 1
    return [(m, outcome) for m, outcome in results if outcome not in OUTCOMES]


class RoundTrip:
    """A confluent-kafka producer (acks=all, idempotent) and consumer on a topic no mutation names."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.acked: dict[int, bytes] = {}
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 1})
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fuzz-check", "enable.auto.commit": False,
                                  "isolation.level": "read_committed"})
        self.consumer.assign([TopicPartition(CHECK_TOPIC, 0, 0)])

    def run(self, round_number: int, count: int = 10) -> None:
        values = [b"round-%d-%d" % (round_number, i) for i in range(count)]
        errors = []

        def delivered(err, msg):
            if err is not None:
                errors.append(err)
            else:
                self.acked[msg.offset()] = msg.value()
        for value in values:
            self.producer.produce(CHECK_TOPIC, value=value, partition=0, on_delivery=delivered)
        assert self.producer.flush(30) == 0 and not errors, f"round {round_number}: produce failed: {errors}"
        assert _read(self.consumer, count) == values, f"round {round_number}: read back differs"

    def close(self) -> None:
        self.consumer.close()
        self.producer = None  # librdkafka's producer goes with its last reference

    def read_everything(self) -> dict[int, bytes]:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "fuzz-final", "enable.auto.commit": False,
                             "isolation.level": "read_committed"})
        consumer.assign([TopicPartition(CHECK_TOPIC, 0, 0)])
        try:
            got = {}
            deadline = time.monotonic() + 30
            while len(got) < len(self.acked) and time.monotonic() < deadline:
                for message in consumer.consume(500, timeout=0.2):
                    if message.error():
                        raise KafkaException(message.error())
                    got[message.offset()] = message.value()
            for message in consumer.consume(500, timeout=0.5):  # nothing beyond what was acknowledged
                got[message.offset()] = message.value()
            return got
        finally:
            consumer.close()


def _read(consumer, count: int) -> list[bytes]:
    got = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        for message in consumer.consume(count - len(got), timeout=0.2):
            if message.error():
                raise KafkaException(message.error())
            got.append(message.value())
    return got


@pytest.fixture
def proxied_broker(tmp_path):
    """A broker that advertises a recording proxy in front of it."""
    broker = BrokerProcess(tmp_path / "data")
    proxy = RecordingProxy(free_port(), broker.port).start()
    broker.overrides.update({"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.listen_port}",
                             "group.initial.rebalance.delay.ms": "0"})
    broker.start()
    yield broker, proxy
    broker.stop()
    proxy.stop()


def test_mutated_frames_never_take_the_broker_down(proxied_broker, tmp_path):
    global _replay
    broker, proxy = proxied_broker
    started = time.monotonic()
    bootstrap = f"127.0.0.1:{proxy.listen_port}"
    record_all(bootstrap, CORPUS_TOPIC)  # also with a saved corpus: it leaves the broker in the recorded state
    frames = proxy.stop_recording()
    corpus = corpus_file.load(SAVED_CORPUS) if SAVED_CORPUS else build_corpus(frames, CORPUS_TOPIC)
    corpus_file.save(corpus, tmp_path / "fuzz-corpus.bin")
    _replay = f"WEIR_FUZZ_SEED={SEED} WEIR_FUZZ_CORPUS={tmp_path / 'fuzz-corpus.bin'}"
    assert not missing_pairs(corpus)
    recorded_clients = {seed.payload[10:10 + struct.unpack_from(">h", seed.payload, 8)[0]].decode()
                        for seed in corpus if seed.origin == "recorded"}
    for client in ("rdkafka", "kafka-python", "aiokafka"):
        assert any(client in name for name in recorded_clients), f"no frames recorded from {client}"
    recorded_at = time.monotonic()

    plan = Mutator(random.Random(SEED), corpus).plan(MUTATIONS, PER_PAIR)
    held_back = {what: [m for m in plan if predicate(m.wire)] for what, predicate in HELD_BACK}
    plan = [m for m in plan if not any(m in held for held in held_back.values())]
    check = RoundTrip(bootstrap)
    try:
        check.run(0)
        per_round = -(-len(plan) // ROUNDS)
        for number in range(ROUNDS):
            batch = plan[number * per_round:(number + 1) * per_round]
            log_mark, local_ports = len(broker.lines), {}
            failures = asyncio.run(send_round(broker.port, batch, local_ports))
            assert broker.alive(), _report(f"the broker exited in round {number + 1}", batch, broker)
            assert not failures, _report(failures[0][1], [failures[0][0]], broker, more=len(failures) - 1)
            _assert_no_unexpected_errors(broker, log_mark, local_ports)
            check.run(number + 1)
    finally:
        check.close()
    assert check.read_everything() == check.acked, f"{_replay}: committed data differs from what was acknowledged"
    # What the mutated frames left on disk (topics, coordinator records) must not stop a restart.
    assert broker.stop() == 0, _report("the broker did not stop cleanly", [], broker)
    broker.start()
    assert check.read_everything() == check.acked, f"{_replay}: after a restart, committed data differs"
    print(f"\nfuzz seed {SEED}: {len(corpus)} seeds ({sum(s.origin == 'recorded' for s in corpus)} recorded) for "
          f"{len(advertised_pairs())} (API, version) pairs; {len(plan)} mutations in {ROUNDS} rounds; "
          f"recording {recorded_at - started:.1f} s, fuzzing {time.monotonic() - recorded_at:.1f} s; "
          f"outcomes {dict(_outcomes)}")
    for what, held in held_back.items():
        if held:
            print(f"held back (known defect: {what}): {len(held)}")
    for what, count in _tolerated.items():
        print(f"tolerated (known defect: {what}): {count}")


_replay = f"WEIR_FUZZ_SEED={SEED}"
_tolerated: dict[str, int] = {}


def _assert_no_unexpected_errors(broker: BrokerProcess, log_mark: int, local_ports: dict[int, Mutation]) -> None:
    """A handler raising something other than a decode error is a bug even though the broker survives it."""
    lines = broker.lines[log_mark:]
    for number, line in enumerate(lines):
        if UNEXPECTED not in line:
            continue
        api_key = int(line.split("api key ", 1)[1].split(" ", 1)[0])
        port = int(line.split(" from ", 1)[1].split(";", 1)[0].rsplit(":", 1)[1])
        # the traceback runs to the next log line, which starts with the date
        traceback = [line] + list(takewhile(lambda text: not text[:4].isdigit(), lines[number + 1:]))
        known = next((what for what, key, text in TOLERATED_ERRORS
                      if key == api_key and any(text in t for t in traceback)), None)
        if known is not None:
            _tolerated[known] = _tolerated.get(known, 0) + 1
            continue
        mutation = local_ports.get(port)
        pytest.fail(f"{_replay}: a handler failed unexpectedly\n"
                    f"{mutation.describe() if mutation else '(frame not found)'}\n{''.join(traceback)}")


def _report(reason: str, mutations: list[Mutation], broker: BrokerProcess, more: int = 0) -> str:
    text = f"{_replay}: {reason}"
    if more:
        text += f" (and {more} more)"
    for mutation in mutations[:1]:
        text += "\n" + mutation.describe()
    return text + "\nbroker log tail:\n" + "".join(broker.lines[-15:])
