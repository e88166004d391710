"""Kafka Connect in distributed mode with exactly-once source support (KIP-618), its config,
offset and status topics on the broker: two workers, a file source that supports exactly-once
(``exactly.once.support=required``: transactional task producers, zombie fencing through
Admin.fenceProducers, the leader's transactional config writes) and a file sink.

The worker running the source task is killed -9 while it copies; the other takes the task over,
and the topic holds every line exactly once, in order, under read_committed. A restart of the
connector and its task through the REST API, and more lines: still exactly once. The same
scenario on Weir and on Apache Kafka (the session's), with the same results.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.mirror.connect_worker import ConnectWorker
from tests.support.waiting import wait_until

TIMEOUT = 180.0  # two JVM workers, a session timeout and a rebalance on a loaded two-core machine


@pytest.fixture(params=["weir", "kafka"])
def broker(request):
    return request.getfixturevalue({"weir": "weir_process", "kafka": "kafka_broker"}[request.param])


@pytest.fixture
def workers(broker, tmp_path):
    cluster = f"connect-{uuid.uuid4().hex[:8]}"
    started = [ConnectWorker(tmp_path / f"worker-{i}", broker.bootstrap, cluster).start() for i in range(2)]
    try:
        for worker in started:
            wait_until(worker.ready, lambda w=worker: f"the Connect worker's REST API:\n{w.tail()}",
                       timeout=TIMEOUT, interval=0.2)
        yield started
    finally:
        for worker in started:
            worker.stop()


class Lines:
    """The source file, appended to as a producing application would."""

    def __init__(self, path):
        self.path = path
        self.count = 0
        path.write_text("")

    def append(self, count: int) -> None:
        with open(self.path, "a") as file:
            file.writelines(f"line-{i:05d}\n" for i in range(self.count, self.count + count))
        self.count += count

    def expected(self) -> list[str]:
        return [f"line-{i:05d}" for i in range(self.count)]


class Reader:
    """Everything the topic holds, read_committed, read on as more arrives."""

    def __init__(self, bootstrap: str, topic: str):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                                  "enable.auto.commit": False, "isolation.level": "read_committed"})
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        self.values: list[str] = []

    def at_least(self, count: int) -> bool:
        message = self.consumer.poll(0.5)
        if message is not None and not message.error():
            self.values.append(message.value().decode())
        return len(self.values) >= count

    def close(self) -> None:
        self.consumer.close()


def task_state(worker: ConnectWorker, connector: str) -> tuple[str, str] | None:
    """(state, worker id) of the connector's task 0, None before it has one."""
    status, body = worker.rest("GET", f"/connectors/{connector}/status")
    if status != 200 or not body.get("tasks"):
        return None
    task = body["tasks"][0]
    return task["state"], task["worker_id"]


def test_a_worker_killed_mid_stream_loses_and_doubles_nothing(broker, workers, tmp_path):
    topic = f"lines-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # held: the future dies with its client
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
    lines = Lines(tmp_path / "input.txt")
    lines.append(400)
    sink_file = tmp_path / "output.txt"
    first = workers[0]
    status, body = first.rest("PUT", "/connectors/lines-source/config", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
        "file": str(lines.path), "topic": topic,
        "exactly.once.support": "required", "transaction.boundary": "poll"})
    assert status == 201, body
    status, body = first.rest("PUT", "/connectors/lines-sink/config", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "topics": topic, "file": str(sink_file)})
    assert status == 201, body

    reader = Reader(broker.bootstrap, topic)
    try:
        wait_until(lambda: reader.at_least(1), "the first transaction of lines", timeout=TIMEOUT, interval=0)
        _state, worker_id = wait_until(lambda: task_state(first, "lines-source"), "the source task's worker",
                                       timeout=TIMEOUT, interval=0.2)
        victim = next(w for w in workers if worker_id.endswith(f":{w.port}"))
        survivor = next(w for w in workers if w is not victim)
        # kill -9, mid-stream: the task reads 1 KiB of the file at a time (~85 lines), one transaction a poll.
        # (batch.size stays at its default: below the lines buffered, FileStreamSourceTask holds the rest
        # back until the file grows again, on Kafka as on Weir.)
        victim.kill()
        lines.append(300)

        wait_until(lambda: reader.at_least(lines.count), lambda: f"{lines.count} lines, {len(reader.values)} "
                   f"so far:\n{survivor.tail()}", timeout=TIMEOUT, interval=0)
        assert reader.values == lines.expected()  # every line once, in order
        assert task_state(survivor, "lines-source")[1].endswith(f":{survivor.port}")

        status, _ = survivor.rest("POST", "/connectors/lines-source/restart?includeTasks=true")
        assert status in (200, 202, 204)
        wait_until(lambda: (task_state(survivor, "lines-source") or ("",))[0] == "RUNNING",
                   "the restarted task running", timeout=TIMEOUT, interval=0.2)
        lines.append(100)
        wait_until(lambda: reader.at_least(lines.count), "the lines after the restart", timeout=TIMEOUT, interval=0)
        while reader.consumer.poll(1.0) is not None:  # anything doubled would follow right behind
            pytest.fail("more records than lines")
        assert reader.values == lines.expected()
    finally:
        reader.close()

    # the sink is at-least-once (its offsets are committed after the file is written): every line arrives
    wait_until(lambda: sink_file.exists() and set(sink_file.read_text().split()) >= set(lines.expected()),
               "every line in the sink's file", timeout=TIMEOUT, interval=0.2)
