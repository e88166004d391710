"""The recorder's bounds and buckets, and the scrape-time gauges, against a real context on a manual clock."""

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from weir.broker import handlers  # noqa: F401  (registers the served versions)
from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig, ConfigError
from weir.broker.context import BrokerContext
from weir.broker.dispatcher import Dispatcher
from weir.broker.metrics import recorder_for
from weir.broker.metrics.collector import BrokerCollector, request_name
from weir.broker.metrics.recorder import NULL_RECORDER, MetricsRecorder
from weir.broker.txn.state import TxnMetadata, TxnState
from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import fetch


def samples(context, server=None) -> dict:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(context, context.metrics, server))
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@pytest.fixture
def context(tmp_path):
    config = BrokerConfig({"metrics.listener": "127.0.0.1:0", "transaction.state.log.num.partitions": "2",
                           "offsets.topic.num.partitions": "2"})
    context = BrokerContext(config, tmp_path, "127.0.0.1", 9092, ManualClock(start_ms=10_000))
    context.open()
    return context


def test_off_by_default_and_validated():
    assert recorder_for(BrokerConfig()) is NULL_RECORDER
    with pytest.raises(ConfigError):
        BrokerConfig({"metrics.listener": "no-port"})
    assert isinstance(recorder_for(BrokerConfig({"metrics.listener": ":9404"})), MetricsRecorder)


def test_dispatcher_is_timed_only_when_metrics_are_on(context, tmp_path):
    assert Dispatcher(context).dispatch.__name__ == "_measured_dispatch"
    plain = BrokerContext(BrokerConfig(), tmp_path / "plain", "127.0.0.1", 9092)
    assert Dispatcher(plain).dispatch.__name__ == "dispatch"


def test_only_served_keys_and_versions_are_recorded_and_buckets_are_cumulative(context):
    recorder = context.metrics
    recorder.request(ApiKey.PRODUCE, 9, 0.0004)    # 0.4 ms
    recorder.request(ApiKey.PRODUCE, 9, 0.0025)    # exactly on the 2.5 ms bound
    recorder.request(ApiKey.PRODUCE, 10, 40.0)     # past the last bound
    recorder.request(ApiKey.PRODUCE, 2, 0.001)     # advertised but refused: not served
    recorder.request(9999, 0, 0.001)               # unknown key
    recorder.request(ApiKey.METADATA, 99, 0.001)   # unknown version
    got = samples(context)
    requests = {labels: v for (name, labels), v in got.items() if name == "kafka_network_requestmetrics_requests_total"}
    assert requests == {(("request", "Produce"), ("version", "9")): 2, (("request", "Produce"), ("version", "10")): 1}

    def bucket(le):
        return got[("kafka_network_requestmetrics_totaltimems_bucket", (("le", le), ("request", "Produce")))]
    assert (bucket("0.25"), bucket("0.5"), bucket("2.5"), bucket("5.0"), bucket("30000.0"), bucket("+Inf")) == \
        (0, 1, 2, 2, 2, 3)
    assert got[("kafka_network_requestmetrics_totaltimems_sum", (("request", "Produce"),))] == pytest.approx(40002.9)
    assert request_name(ApiKey.OFFSET_FOR_LEADER_EPOCH) == "OffsetForLeaderEpoch"


async def test_topic_bytes_and_deleted_topics(context):
    context.logs.create_topic("kept", 1)
    context.logs.create_topic("gone", 1)
    context.metrics.produced("kept", 100)
    context.metrics.produced("kept", 20)
    context.metrics.produced("gone", 7)
    context.metrics.fetched([fetch.TopicResponse(topic="kept", partitions=[
        fetch.PartitionData(partition_index=0, records=b"x" * 30), fetch.PartitionData(partition_index=1, records=b""),
        fetch.PartitionData(partition_index=2, records=None)])])
    got = samples(context)
    assert got[("kafka_server_brokertopicmetrics_bytesin_total", (("topic", "kept"),))] == 120
    assert got[("kafka_server_brokertopicmetrics_bytesin_total", (("topic", "gone"),))] == 7
    assert got[("kafka_server_brokertopicmetrics_bytesout_total", (("topic", "kept"),))] == 30
    await context.logs.delete_topic("gone")
    assert ("kafka_server_brokertopicmetrics_bytesin_total", (("topic", "gone"),)) not in samples(context)


def test_open_transactions_and_oldest_age_come_from_the_coordinator(context):
    clock = context.clock
    for name, state, start in (("a", TxnState.ONGOING, 4_000), ("b", TxnState.PREPARE_COMMIT, 7_000),
                               ("c", TxnState.COMPLETE_ABORT, 1_000), ("d", TxnState.EMPTY, -1)):
        context.txn.replay(name, TxnMetadata(name, producer_id=ord(name), producer_epoch=0, state=state,
                                             start_ms=start))
    got = samples(context)
    assert got[("weir_txn_open_transactions", ())] == 2
    assert got[("weir_txn_oldest_open_transaction_age_ms", ())] == clock.now_ms() - 4_000
    clock.advance(500)
    assert samples(context)[("weir_txn_oldest_open_transaction_age_ms", ())] == clock.now_ms() - 4_000


class _Server:
    connection_count = 3
    bytes_held = 4096


def test_connection_figures_come_from_the_server(context):
    got = samples(context, _Server())
    assert got[("kafka_server_socket_server_metrics_connection_count", ())] == 3
    assert got[("kafka_network_socketserver_memorypoolused", ())] == 4096


async def test_a_stalled_event_loop_shows_in_the_loop_lag_metrics(context):
    """The listener's monitor runs on the broker's loop: a 150 ms stall lands in the 100-250 ms bucket."""
    import asyncio
    import time

    from weir.broker.metrics.listener import MetricsListener
    from tests.support.waiting import wait_until_async

    listener = MetricsListener(context)
    await listener.start()
    try:
        await wait_until_async(lambda: sum(listener.loop_lag.buckets) >= 2, "two lag samples", timeout=30)
        time.sleep(0.15)  # the stall being measured: the loop runs nothing meanwhile
        await wait_until_async(lambda: listener.loop_lag.max_ms >= 100, "the stall recorded", timeout=30)
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        text = (await reader.read()).decode().split("\r\n\r\n", 1)[1]
        writer.close()
        got = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
        assert got[("weir_event_loop_lag_ms_bucket", (("le", "250.0"),))] \
            - got[("weir_event_loop_lag_ms_bucket", (("le", "100.0"),))] >= 1
        assert got[("weir_event_loop_lag_ms_count", ())] >= 3
        assert 100 <= got[("weir_event_loop_lag_max_ms", ())] < 10_000
    finally:
        await listener.stop()
    assert listener.loop_lag._task is None


def test_quota_clients_have_their_rate_quota_and_throttle_time(context):
    quotas = context.quotas
    assert quotas.store.alter([([("client-id", "slow")], [("producer_byte_rate", 1000.0, False)])], False) \
        == [(0, None)]
    now = context.clock.now_ms()
    assert quotas.record("producer_byte_rate", "User:ANONYMOUS", "slow", 5_000, now) == 0
    assert quotas.record("producer_byte_rate", "User:ANONYMOUS", "slow", 10_000, now) == 5_000
    assert quotas.record("producer_byte_rate", "User:ANONYMOUS", "free", 10_000, now) == 0  # no quota: unmeasured
    got = samples(context)
    labels = (("client_id", "slow"), ("user", ""))
    assert got[("kafka_server_produce_byte_rate", labels)] == 1500.0  # 15 kB over the padded 10 s window
    assert got[("weir_quota_producer_byte_rate", labels)] == 1000.0
    assert got[("kafka_server_produce_throttle_time_total", labels)] == 5_000
    assert got[("weir_quota_produce_throttled_responses_total", labels)] == 1
    assert not [key for key in got if ("client_id", "free") in key[1]]
