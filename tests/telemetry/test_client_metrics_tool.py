"""Kafka's ``kafka-client-metrics`` tool (ClientMetricsCommand) against Weir and Apache Kafka
4.4.0 (the session's shared pair): --alter, --describe, --list and --delete print the same rows
and refuse the same bad input with the same messages."""

from __future__ import annotations

from tests.tools.tools import run_tool

from .wire import unique

CLIENT_METRICS = "org.apache.kafka.tools.ClientMetricsCommand"
METRICS = "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator."


def _session(broker, name: str, other: str, nothing: str) -> list[tuple[int, str]]:
    def tool(*args: str) -> tuple[int, str]:
        run = run_tool(CLIENT_METRICS, "--bootstrap-server", broker.bootstrap, *args)
        return run.returncode, run.stdout
    listed = tool("--list")
    return [
        tool("--alter", "--name", name, "--metrics", METRICS, "--interval", "60000",
             "--match", f"client_id={name}", "--match", "client_software_name=apache-kafka-java"),
        tool("--alter", "--name", other, "--metrics", "*", "--match", f"client_id={other}"),
        tool("--describe", "--name", name),
        tool("--describe", "--name", nothing),
        tool("--alter", "--name", name, "--interval", "60"),
        tool("--alter", "--name", name, "--match", "client_colour=red"),
        tool("--alter", "--name", name, "--match", "client_id=["),
        tool("--alter", "--name", name, "--interval", "7200000"),
        tool("--delete", "--name", other),
        tool("--describe", "--name", other),
        # --list shows every subscription on the broker: only this test's lines are compared
        (listed[0], "".join(line + "\n" for line in tool("--list")[1].splitlines() if line in (name, other))),
    ]


def test_kafka_client_metrics_rows_match_kafka(kafka_broker, weir_process):
    names = unique("tel-tool"), unique("tel-tool-gone"), unique("tel-tool-none")
    kafka = _session(kafka_broker, *names)
    weir = _session(weir_process, *names)
    name = names[0]
    assert weir == kafka
    assert weir[0] == (0, f"Altered client metrics config for {name}.\n")
    assert weir[2] == (0, f"Client metrics configs for {name} are:\n  interval.ms=60000\n"
                          f"  match=client_id={name},client_software_name=apache-kafka-java\n"
                          "  metrics=org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator.\n")
    assert [code for code, _ in weir[4:8]] == [1, 1, 1, 1]
    assert "interval must be between 100 and 3600000" in weir[4][1]
    assert "Illegal client matching pattern: client_colour=red" in weir[5][1]
    assert weir[-1] == (0, f"{name}\n")
