"""The Prometheus endpoint (``metrics.listener``) of the real broker, scraped after real client traffic."""

import asyncio
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from prometheus_client.parser import text_string_to_metric_families

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import fetch
from tests.broker_process import BrokerProcess, free_port
from tests.compat.test_confluent_kafka import produce
from tests.support.topics import create_topic


@pytest.fixture
def metrics_broker(tmp_path):
    port = free_port()
    process = BrokerProcess(tmp_path / "data", overrides={"metrics.listener": f"127.0.0.1:{port}"}).start()
    process.metrics_url = f"http://127.0.0.1:{port}/metrics"
    yield process
    process.stop()


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value}."""
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=")
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def scrape_until(url, predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(url)
        if predicate(samples) or time.monotonic() > deadline:
            return samples
        time.sleep(0.05)


def log_bytes(data_dir: Path, topic: str) -> int:
    return sum(path.stat().st_size for path in (data_dir / f"{topic}-0").glob("*.log"))


def test_counts_bytes_groups_and_connections_follow_client_traffic(metrics_broker, topic_name):
    url, bootstrap = metrics_broker.metrics_url, metrics_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    before = scrape(url)
    assert value(before, "kafka_network_requestmetrics_requests_total", request="Produce", version="9") is None
    produce(bootstrap, topic_name, [(0, None, b"v%d" % i) for i in range(200)], **{"linger.ms": 0})
    produce(bootstrap, topic_name, [(0, None, b"w" * 1000)])

    after = scrape(url)
    produce_counts = {labels: v for (name, labels), v in after.items()
                      if name == "kafka_network_requestmetrics_requests_total" and ("request", "Produce") in labels}
    assert sum(produce_counts.values()) >= 2
    assert value(after, "kafka_network_requestmetrics_totaltimems_count", request="Produce") == \
        sum(produce_counts.values())
    assert value(after, "kafka_network_requestmetrics_totaltimems_bucket", request="Produce", le="+Inf") == \
        sum(produce_counts.values())
    assert value(after, "kafka_network_requestmetrics_totaltimems_sum", request="Produce") > 0
    assert value(after, "kafka_network_requestmetrics_requests_total", request="CreateTopics", version="4") >= 1
    assert value(after, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic_name) == \
        log_bytes(metrics_broker.data_dir, topic_name), "bytes in = the batches stored, byte for byte"
    assert value(after, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic_name) is None
    assert value(after, "process_open_fds") > 0

    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "metrics-group", "auto.offset.reset": "earliest",
                       "enable.auto.commit": False})
    reader.subscribe([topic_name])
    try:
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 201 and time.monotonic() < deadline:
            seen += sum(1 for m in reader.consume(500, timeout=0.5) if not m.error())
        assert seen == 201
        with_group = scrape(url)
        assert value(with_group, "kafka_coordinator_group_groupmetadatamanager_numgroups", state="Stable") == 1
        assert value(with_group, "kafka_coordinator_group_groupmetadatamanager_numgroups", state="Empty") == 0
        assert value(with_group, "kafka_server_socket_server_metrics_connection_count") >= 2
        assert value(with_group, "kafka_network_requestmetrics_requests_total", request="JoinGroup", version="5") >= 1
        assert value(with_group, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic_name) >= \
            log_bytes(metrics_broker.data_dir, topic_name)
    finally:
        reader.close()
    empty = scrape_until(url, lambda s: value(
        s, "kafka_coordinator_group_groupmetadatamanager_numgroups", state="Empty") == 1)
    assert value(empty, "kafka_coordinator_group_groupmetadatamanager_numgroups", state="Stable") == 0

    out_before = value(empty, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic_name)
    fetched = asyncio.run(fetch_from_start(metrics_broker.port, topic_name))
    assert fetched > 0
    assert value(scrape(url), "kafka_server_brokertopicmetrics_bytesout_total", topic=topic_name) == \
        out_before + fetched


async def fetch_from_start(port: int, topic: str) -> int:
    conn = await Connection.open("127.0.0.1", port)
    try:
        response = await conn.request(ApiKey.FETCH, 12, fetch.REQUEST(
            max_wait_ms=0, min_bytes=0, isolation_level=0, session_id=0, topics=[fetch.FetchTopic(
                topic=topic, partitions=[fetch.FetchPartition(partition=0, fetch_offset=0,
                                                              partition_max_bytes=1 << 20)])]))
        return len(response.responses[0].partitions[0].records)
    finally:
        await conn.close()


def test_open_transaction_and_lso_lag(metrics_broker, topic_name):
    url, bootstrap = metrics_broker.metrics_url, metrics_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    idle = scrape(url)
    assert value(idle, "weir_txn_open_transactions") == 0
    assert value(idle, "weir_txn_oldest_open_transaction_age_ms") == 0

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "metrics-txn", "linger.ms": 0})
    producer.init_transactions(20)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic_name, value=b"t%d" % i, partition=0)
    assert producer.flush(20) == 0
    opened = scrape(url)
    assert value(opened, "weir_txn_open_transactions") == 1
    assert value(opened, "weir_txn_oldest_open_transaction_age_ms") >= 0
    assert value(opened, "weir_log_last_stable_offset_lag", topic=topic_name, partition="0") == 5
    later = scrape_until(url, lambda s: value(s, "weir_txn_oldest_open_transaction_age_ms") >
                         value(opened, "weir_txn_oldest_open_transaction_age_ms"))
    assert value(later, "weir_txn_oldest_open_transaction_age_ms") > \
        value(opened, "weir_txn_oldest_open_transaction_age_ms"), "the age grows while the transaction is open"

    producer.commit_transaction(20)
    # The commit is answered once PrepareCommit is stored; markers follow, then CompleteCommit.
    done = scrape_until(url, lambda s: value(s, "weir_txn_open_transactions") == 0 and
                        value(s, "weir_log_last_stable_offset_lag", topic=topic_name, partition="0") is None)
    assert value(done, "weir_txn_open_transactions") == 0
    assert value(done, "weir_txn_oldest_open_transaction_age_ms") == 0
    assert value(done, "weir_log_last_stable_offset_lag", topic=topic_name, partition="0") is None
    for (name, _labels), v in done.items():
        assert name != "weir_log_last_stable_offset_lag", f"no partition holds back readers now, got {v}"


def test_other_paths_and_methods_are_refused(metrics_broker):
    base = metrics_broker.metrics_url.rsplit("/", 1)[0]
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(base + "/other", timeout=10)
    assert missing.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as posted:
        urllib.request.urlopen(urllib.request.Request(metrics_broker.metrics_url, data=b"x", method="POST"),
                               timeout=10)
    assert posted.value.code == 405
    assert scrape(metrics_broker.metrics_url)


def listening_ports(pid: int) -> set[int]:
    """TCP ports the process listens on, from /proc (socket inodes of its fds x /proc/net/tcp)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_no_metrics_listener_by_default(broker):
    assert listening_ports(broker.process.pid) == {broker.port}
    assert not broker.log_contains("metrics listener")


def test_metrics_listener_is_the_only_extra_port(metrics_broker):
    metrics_port = int(metrics_broker.metrics_url.rsplit(":", 1)[1].split("/")[0])
    assert listening_ports(metrics_broker.process.pid) == {metrics_broker.port, metrics_port}
    assert metrics_broker.log_contains(f"metrics listener on http://127.0.0.1:{metrics_port}/metrics")
