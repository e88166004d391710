"""The control channel from other languages and the command line: the README's Java example
(compiled and run through reference/) and Go example (``go test``, no dependency beyond Go's
standard library), and ``weir-admin faults``, against one child broker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

import weir
from reference.kafka import java_command
from tests.support.waiting import wait_until

GO_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "faults" / "go"
WEIR_ADMIN = str(Path(sys.executable).with_name("weir-admin"))


@pytest.fixture(scope="module")
def broker():
    with weir.run_broker() as running:
        yield running


@pytest.fixture
def faults(broker):
    yield broker.faults
    broker.resume()
    broker.faults.clear()


def channel_env(broker) -> dict[str, str]:
    control = broker.faults
    return {**os.environ, "WEIR_BOOTSTRAP": broker.bootstrap_servers, "WEIR_FAULTS_URL": control.url,
            "WEIR_FAULTS_TOKEN": control.token, "WEIR_ADMIN": WEIR_ADMIN}


def test_the_java_example_rides_out_three_injected_errors(broker, faults):
    topic = broker.create_topic("java-faults")
    control = broker.faults
    run = subprocess.run(java_command("dev.weir.reference.faults.FaultInjectionExample", broker.bootstrap_servers,
                                      control.url, control.token, topic, "20"),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    status = json.loads(run.stdout.strip().splitlines()[-1])
    assert status["fired"] == {"Produce": 3} and status["armed"] == []
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "java-faults-reader",
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0)])
    values: list[bytes] = []
    try:
        def read() -> bool:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                values.append(message.value())
            return len(values) >= 20
        wait_until(read, lambda: f"20 records, read {len(values)}", timeout=60, interval=0)
        values += [m.value() for m in consumer.consume(100, timeout=1.0) if not m.error()]
    finally:
        consumer.close()
    assert values == [b"value-%d" % i for i in range(20)]


def test_the_go_example_tests_pass(broker, faults):
    go = shutil.which("go")
    assert go is not None, "Go is needed (make install-test installs nothing for it: it is on the machine)"
    run = subprocess.run([go, "test", "-count=1", "-v", "./..."], cwd=GO_EXAMPLE, env=channel_env(broker),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    for test in ("TestDisconnectClosesInsteadOfAnswering", "TestDelayHoldsOneAnswerBack", "TestPauseThenResume",
                 "TestAFaultKafkaNeverGivesIsRefused", "TestWeirAdminFaults"):
        assert f"--- PASS: {test}" in run.stdout, run.stdout


def admin(broker, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([WEIR_ADMIN, "--json", "faults", *args], env=channel_env(broker), capture_output=True,
                          text=True, timeout=60)


def test_weir_admin_faults(broker, faults):
    assert admin(broker, "delay", "Fetch", "0.5", "--times", "2").returncode == 0
    narrowed = admin(broker, "error", "Produce", "NOT_LEADER_OR_FOLLOWER", "--topic", "t", "--partition", "1")
    assert narrowed.returncode == 0, narrowed.stderr
    assert admin(broker, "pause").returncode == 0
    status = json.loads(admin(broker, "status").stdout)
    assert status["paused"] is True and status["disk_full"] is False
    assert [(f["kind"], f["api"], f["remaining"]) for f in status["armed"]] == [("delay", "Fetch", 2),
                                                                               ("error", "Produce", 1)]
    assert status["armed"][1]["topic"] == "t" and status["armed"][1]["partition"] == 1
    refused = admin(broker, "error", "Fetch", "GROUP_ID_NOT_FOUND")
    assert refused.returncode == 1 and "Kafka never answers Fetch with GROUP_ID_NOT_FOUND" in refused.stderr
    assert admin(broker, "resume").returncode == 0 and admin(broker, "clear").returncode == 0
    assert json.loads(admin(broker, "status").stdout) == {"fired": {}, "armed": [], "paused": False,
                                                           "disk_full": False}
    wrong_token = subprocess.run([WEIR_ADMIN, "faults", "--token", "wrong", "pause"], env=channel_env(broker),
                                 capture_output=True, text=True, timeout=60)
    assert wrong_token.returncode == 1 and "401" in wrong_token.stderr
