"""The command line: Kafka config names, clear start-up errors, clean shutdown, docker-compose."""

import subprocess
import sys

import yaml

from weir.broker.__main__ import load_config, parse_args
from tests.broker_process import REPO, BrokerProcess


def run_broker(*args, timeout=20):
    return subprocess.run([sys.executable, "-m", "weir.broker", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def test_unknown_setting_is_a_clear_startup_error(tmp_path):
    result = run_broker("--data-dir", str(tmp_path), "--override", "log.segmnt.bytes=100")
    assert result.returncode == 2
    assert "unknown config 'log.segmnt.bytes'" in result.stderr


def test_bad_value_and_bad_properties_file_are_startup_errors(tmp_path):
    result = run_broker("--data-dir", str(tmp_path), "--override", "num.partitions=zero")
    assert result.returncode == 2 and "invalid value 'zero' for num.partitions" in result.stderr
    properties = tmp_path / "server.properties"
    properties.write_text("# comment\nauto.create.topics.enable = maybe\n")
    result = run_broker("--data-dir", str(tmp_path), "--config", str(properties))
    assert result.returncode == 2 and "auto.create.topics.enable" in result.stderr


def test_properties_file_and_overrides_combine(tmp_path):
    properties = tmp_path / "server.properties"
    properties.write_text("num.partitions=4\nlog.retention.hours=1\n! another comment\n")
    config = load_config(parse_args(["--config", str(properties), "--override", "num.partitions=6"]))
    assert config["num.partitions"] == 6
    assert config.retention_ms == 3_600_000
    assert config["auto.create.topics.enable"] is True


def test_sigterm_shuts_down_cleanly_and_snapshots(tmp_path):
    broker = BrokerProcess(tmp_path / "data", overrides={"num.partitions": "2"}).start()
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    producer.produce("auto-created", b"v", partition=1)
    assert producer.flush(10) == 0
    assert broker.stop() == 0
    assert broker.log_contains("stopped cleanly")
    # the producer states changed since their snapshots: one checkpoint file for the data directory,
    # with the written partition's state at its log end (broker/log/producer_checkpoint.py)
    from weir.broker.log import producer_checkpoint
    saved = producer_checkpoint.load(tmp_path / "data")
    assert [(partition, offset) for (_topic_id, partition), (offset, _state) in saved.items()] == [(1, 1)]
    assert (tmp_path / "data" / "auto-created-0").is_dir(), "num.partitions applies to auto-created topics"


def test_docker_compose_runs_the_broker_command_line():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    service = compose["services"]["weir"]
    dockerfile = (REPO / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["python", "-m", "weir.broker"]' in dockerfile
    args = parse_args([str(a) for a in service["command"]])
    assert (args.host, args.port, args.data_dir) == ("0.0.0.0", 9092, "/data")
    load_config(args)  # every override is a valid Kafka setting
    assert "9092:9092" in service["ports"]
    volume, mount = service["volumes"][0].split(":")
    assert mount == args.data_dir and volume in compose["volumes"]
