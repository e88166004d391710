"""Listeners from a server.properties alone: several of them, named ones, each advertising its own address."""

from __future__ import annotations

import subprocess
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from tests.broker_process import free_port
from tests.security.brokers import ConfiguredBroker, listeners_setting, write_properties


def test_each_listener_answers_metadata_with_its_own_advertised_address(tmp_path):
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "INTERNAL": "PLAINTEXT", "REPLICATION": "PLAINTEXT"})
    settings["advertised.listeners"] = (f"PLAINTEXT://localhost:{ports['PLAINTEXT']},"
                                        f"INTERNAL://127.0.0.1:{ports['INTERNAL']}")
    broker = ConfiguredBroker(tmp_path, settings, ports).start()
    try:
        seen = {}
        for name in ports:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_for(name)})
            seen[name] = [(b.host, b.port) for b in admin.list_topics(timeout=10).brokers.values()]
        # REPLICATION is not in advertised.listeners: it advertises its bind address
        assert seen == {"PLAINTEXT": [("localhost", ports["PLAINTEXT"])],
                        "INTERNAL": [("127.0.0.1", ports["INTERNAL"])],
                        "REPLICATION": [("127.0.0.1", ports["REPLICATION"])]}
        assert broker.log_contains(f"INTERNAL://127.0.0.1:{ports['INTERNAL']}")  # the ready line names each

        # a record produced through one listener is consumed through another
        producer = Producer({"bootstrap.servers": broker.bootstrap_for("INTERNAL")})
        producer.produce("across", b"v1")
        assert producer.flush(10) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_for("REPLICATION"), "group.id": "g",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["across"])
        message = None
        for _ in range(100):
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                break
        consumer.close()
        assert message is not None and message.value() == b"v1"
    finally:
        broker.stop()


def _start_failure(tmp_path, settings: dict[str, str], *extra: str) -> str:
    properties = write_properties(tmp_path / "bad.properties", settings)
    result = subprocess.run([sys.executable, "-m", "weir.broker", "--config", str(properties),
                             "--data-dir", str(tmp_path / "data"), *extra], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, result.stderr
    return result.stderr


def test_listener_settings_that_do_not_fit_stop_start_up(tmp_path):
    port = free_port()
    assert "No security protocol defined for listener CLIENT" in _start_failure(
        tmp_path, {"listeners": f"CLIENT://127.0.0.1:{port}"})
    assert "EXTERNAL not among the listeners" in _start_failure(
        tmp_path, {"listeners": f"PLAINTEXT://127.0.0.1:{port}", "advertised.listeners": "EXTERNAL://h:1"})
    assert "give one" in _start_failure(tmp_path, {"listeners": f"PLAINTEXT://127.0.0.1:{port}"}, "--port", "1234")
    assert "different name" in _start_failure(
        tmp_path, {"listeners": f"PLAINTEXT://127.0.0.1:{port},PLAINTEXT://127.0.0.1:{port + 1}"})
    assert "nonroutable meta-address" in _start_failure(
        tmp_path, {"listeners": f"PLAINTEXT://0.0.0.0:{port}", "advertised.listeners": f"PLAINTEXT://0.0.0.0:{port}"})
