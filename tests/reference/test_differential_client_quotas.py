"""Client quotas on Weir and on Apache Kafka 4.4.0 (the session's shared pair).

The bar: a 512 KiB/s producer_byte_rate quota on one client id, set with kafka-configs (the
Java Admin's alterClientQuotas), is read back, and throttles that client id: its 8 MB take at
least 8 s (Kafka measures a new client's rate over its ten 1-s windows, so the first ~5 MB
pass before throttling starts; in 500 kB requests the rest take ~10 s on both: measured 10.4 s
on Kafka 4.4.0, 10.3 s on Weir, the largest throttle 4952 ms on each) and the broker tells it
throttle_time_ms > 0, while another client id producing the same 8 MB is never throttled.
Beside it a consumer_byte_rate of 128 KiB/s on the same client id: both brokers let its
consumer read 1,000,000 bytes in 256 kB fetches before the first throttle (~1450 ms on each).
Then bad input, answered field by field alike: unknown keys and entity types, values not above
0, fractional byte rates, duplicate keys, malformed describe filters. And on a Weir of its own:
the quotas survive a restart.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import alter_client_quotas as alter
from weir.protocol.messages import create_partitions, delete_topics, metadata
from weir.protocol.messages import create_topics as creation
from weir.protocol.messages import describe_client_quotas as describe

from tests.broker_process import BrokerProcess
from tests.tools.tools import create_topics, run_tool
from confluent_kafka.admin import NewTopic

CONFIGS = "org.apache.kafka.tools.ConfigCommand"
TOPIC = "quota-bar"
SLOW, FAST = "quota-slow", "quota-fast"
QUOTA = 512 * 1024
TOTAL = 8_000_000
RECORD = 10_000
# 16 requests of 500 kB: the first ~10 pass unthrottled (5 MB over the 10 s window), each later one
# is throttled longer; all but the last throttle (its answer carries it, the flush does not wait)
# add up to ~10 s. With librdkafka's own 1 MB batches they add up to ~5 s: the bar holds for
# smaller requests only, on Kafka as on Weir.
CHUNK = 500_000
# consumer_byte_rate: 128 KiB/s lets ~1.3 MB through in the first ten seconds; fetches of 256 kB
READ_QUOTA = 128 * 1024
FETCH_BYTES = 256 * 1024


def _configs(broker, *args: str):
    run = run_tool(CONFIGS, "--bootstrap-server", broker.bootstrap, *args)
    assert run.returncode == 0, run.stderr
    return run.stdout


def _produce(broker, client_id: str) -> tuple[float, int]:
    """Seconds to produce TOTAL bytes acknowledged, in requests of CHUNK bytes one after the other
    (a flush each: the time then depends on the quota, not on how the client happens to batch),
    and the largest throttle time the broker sent."""
    throttles = [0]
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": client_id, "linger.ms": 1000,
                         "batch.size": 2 * CHUNK,
                         "throttle_cb": lambda event: throttles.append(int(event.throttle_time * 1000))})
    payload = b"q" * RECORD
    began = time.monotonic()
    for _ in range(TOTAL // CHUNK):
        for _ in range(CHUNK // RECORD):
            producer.produce(TOPIC, payload)
        assert producer.flush(60) == 0
    return time.monotonic() - began, max(throttles)


def _consume(broker, client_id: str) -> tuple[int, int]:
    """Bytes read from the topic's start until the broker first throttles the consumer, and that
    throttle time. (Reading on would take ten seconds more: a throttled Fetch is answered empty and
    its bytes taken back, so the rate only falls once the first window expires.)"""
    throttles: list[int] = []
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "client.id": client_id, "group.id": client_id,
                         "enable.auto.commit": False, "fetch.max.bytes": FETCH_BYTES, "message.max.bytes": FETCH_BYTES,
                         "max.partition.fetch.bytes": FETCH_BYTES,
                         "throttle_cb": lambda event: throttles.append(int(event.throttle_time * 1000))})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    began, read = time.monotonic(), 0
    try:
        while not throttles:
            assert time.monotonic() - began < 60, f"read {read} bytes in 60 s without a throttle"
            for message in consumer.consume(100, timeout=0.2):
                assert message.error() is None, message.error()
                read += len(message.value())
    finally:
        consumer.close()
    return read, throttles[0]


def _bar(broker) -> dict:
    create_topics(broker.bootstrap, NewTopic(TOPIC, 1, 1))
    _configs(broker, "--alter", "--entity-type", "clients", "--entity-name", SLOW,
             "--add-config", f"producer_byte_rate={QUOTA},consumer_byte_rate={READ_QUOTA}")
    try:
        described = _configs(broker, "--describe", "--entity-type", "clients", "--entity-name", SLOW)
        slow = _produce(broker, SLOW)
        fast = _produce(broker, FAST)
        reader = _consume(broker, SLOW)
    finally:
        _configs(broker, "--alter", "--entity-type", "clients", "--entity-name", SLOW,
                 "--delete-config", "producer_byte_rate,consumer_byte_rate")
    return {"described": described.strip(), "slow": slow, "fast": fast, "reader": reader}


@pytest.fixture(scope="module")
def bars(kafka_broker, weir_process) -> dict:
    return {"kafka": _bar(kafka_broker), "weir": _bar(weir_process)}


@pytest.mark.parametrize("name", ["weir", "kafka"])
def test_byte_rate_quotas_throttle_that_client_id_only(bars, name):
    seen = bars[name]
    assert seen["described"] == (f"Quota configs for client-id '{SLOW}' are consumer_byte_rate=131072.0, "
                                 "producer_byte_rate=524288.0")
    seconds, throttle_ms = seen["slow"]
    assert seconds >= 8 and throttle_ms > 0, seen
    fast_seconds, fast_throttle_ms = seen["fast"]
    assert fast_throttle_ms == 0 and fast_seconds < seconds, seen
    read_bytes, read_throttle_ms = seen["reader"]
    assert 1_000_000 <= read_bytes <= 1_700_000 and read_throttle_ms > 0, seen


ENTITY = [alter.EntityData(entity_type="client-id", entity_name="quota-bad")]


def _alterations():
    def entry(ops, entity=ENTITY):
        return alter.EntryData(entity=entity, ops=[alter.OpData(key=k, value=v, remove=r) for k, v, r in ops])
    return [
        entry([("producer_byte_rate", 1024.0, False), ("request_percentage", 12.5, False)]),
        entry([("no_such_key", 1.0, False)], [alter.EntityData(entity_type="user", entity_name="quota-bad")]),
        entry([("consumer_byte_rate", -5.0, False)], [alter.EntityData(entity_type="user", entity_name=None)]),
        entry([("consumer_byte_rate", 0.0, False)], [alter.EntityData(entity_type="client-id", entity_name=None)]),
        entry([("producer_byte_rate", 10.5, False)], [alter.EntityData(entity_type="user", entity_name="u2")]),
        entry([("controller_mutation_rate", 2.0, False), ("controller_mutation_rate", 3.0, False)],
              [alter.EntityData(entity_type="user", entity_name="u3")]),
        entry([("producer_byte_rate", 1.0, False)], [alter.EntityData(entity_type="group", entity_name="g")]),
        entry([("producer_byte_rate", 1.0, False)], []),
        entry([("producer_byte_rate", 1.0, False)], [alter.EntityData(entity_type="user", entity_name="")]),
        entry([("connection_creation_rate", 3.0, False)], [alter.EntityData(entity_type="ip", entity_name="10.0.0.1")]),
        entry([("producer_byte_rate", 1.0, False)], [alter.EntityData(entity_type="ip", entity_name="10.0.0.2")]),
        entry([("producer_byte_rate", 1.0, False)], [alter.EntityData(entity_type="ip", entity_name="10.0.0.3"),
                                                      alter.EntityData(entity_type="user", entity_name="x")]),
    ]


def _filters():
    def component(kind, match_type, match=None):
        return describe.Component(entity_type=kind, match_type=match_type, match=match)
    return {
        "exact": ([component("client-id", 0, "quota-bad")], False),
        "ip": ([component("ip", 2)], False),
        "strict_user_default": ([component("user", 1)], True),
        "exact_null": ([component("user", 0)], False),
        "default_with_match": ([component("user", 1, "x")], False),
        "twice": ([component("user", 2), component("user", 2)], False),
        "unknown_type": ([component("group", 2)], False),
        "ip_and_user": ([component("ip", 2), component("user", 2)], False),
        "empty_type": ([component("", 2)], False),
    }


async def _bad_input(broker) -> dict:
    seen = {}
    connection = await Connection.open("127.0.0.1", broker.port, client_id="quota-bad-input")
    try:
        for version in (0, 1):
            answer = await connection.request(ApiKey.ALTER_CLIENT_QUOTAS, version, alter.REQUEST(
                entries=_alterations(), validate_only=version == 0))
            # in no particular order: Kafka's follows its hash maps
            seen[f"alter_v{version}"] = sorted((sorted((d.entity_type, d.entity_name or "") for d in e.entity),
                                                e.error_code, e.error_message) for e in answer.entries)
        for label, (components, strict) in _filters().items():
            answer = None
            for _ in range(100):  # Kafka's broker learns the controller's new quotas a moment later
                answer = await connection.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, describe.REQUEST(
                    components=components, strict=strict))
                if label not in ("exact", "ip") or answer.entries:
                    break
                time.sleep(0.1)
            seen[label] = (answer.error_code, answer.error_message, None if answer.entries is None else sorted(
                (sorted((d.entity_type, d.entity_name or "") for d in e.entity),
                 sorted((v.key, v.value) for v in e.values)) for e in answer.entries))
        removal = await connection.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, alter.REQUEST(entries=[
            alter.EntryData(entity=ENTITY, ops=[alter.OpData(key="producer_byte_rate", value=0.0, remove=True),
                                                alter.OpData(key="request_percentage", value=0.0, remove=True)]),
            alter.EntryData(entity=[alter.EntityData(entity_type="ip", entity_name="10.0.0.1")],
                            ops=[alter.OpData(key="connection_creation_rate", value=0.0, remove=True)])]))
        seen["removed"] = [e.error_code for e in removal.entries]
    finally:
        await connection.close()
    return seen


@pytest.fixture(scope="module")
def bad_input(kafka_broker, weir_process) -> dict:
    import asyncio
    return {name: asyncio.run(_bad_input(broker)) for name, broker in (("kafka", kafka_broker),
                                                                         ("weir", weir_process))}


def test_bad_quota_input_is_answered_as_kafka(bad_input):
    weir, kafka = bad_input["weir"], bad_input["kafka"]
    assert {key: (weir[key], kafka[key]) for key in kafka if weir.get(key) != kafka[key]} == {}
    assert sorted(code for _, code, _ in weir["alter_v1"]) == [0, 0] + [42] * 10
    assert weir["exact"][2] == [([("client-id", "quota-bad")], [("producer_byte_rate", 1024.0),
                                                                ("request_percentage", 12.5)])]
    assert weir["unknown_type"][0] == 35 and weir["removed"] == [0, 0]


async def _describe_one(port) -> list:
    connection = await Connection.open("127.0.0.1", port, client_id="quota-restart")
    try:
        answer = await connection.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1,
                                          describe.REQUEST(components=[], strict=False))
        return sorted((sorted((d.entity_type, d.entity_name or "") for d in e.entity),
                       sorted((v.key, v.value) for v in e.values)) for e in answer.entries)
    finally:
        await connection.close()


def test_quotas_survive_a_restart(tmp_path):
    import asyncio
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        _configs(broker, "--alter", "--entity-type", "users", "--entity-default", "--entity-type", "clients",
                 "--entity-name", "c1", "--add-config", "consumer_byte_rate=2048,controller_mutation_rate=5")
        before = asyncio.run(_describe_one(broker.port))
        assert before == [([("client-id", "c1"), ("user", "")], [("consumer_byte_rate", 2048.0),
                                                                 ("controller_mutation_rate", 5.0)])]
        broker.kill()
        broker.start()
        assert asyncio.run(_describe_one(broker.port)) == before
        described = _configs(broker, "--describe", "--entity-type", "users", "--entity-default",
                             "--entity-type", "clients", "--entity-name", "c1")
        assert "consumer_byte_rate=2048.0" in described, described
    finally:
        broker.stop()


MUTATOR = "quota-mutator"
MUTATION_TOPICS = [f"quota-mutations-{name}" for name in "abcdef"]


async def _mutations(broker) -> dict:
    """controller_mutation_rate=2 (a bucket of 2 x 11 windows = 22 partitions): CreateTopics v7
    (strict) takes 20 + 5, then finds the bucket in debt and refuses the third topic; then, still in
    debt, CreatePartitions v3 (strict) is refused, CreateTopics v5 and DeleteTopics v4 (permissive)
    go through and are throttled."""
    seen = {}
    admin = await Connection.open("127.0.0.1", broker.port, client_id="quota-admin")
    mutator = await Connection.open("127.0.0.1", broker.port, client_id=MUTATOR)
    try:
        answer = await admin.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, alter.REQUEST(entries=[alter.EntryData(
            entity=[alter.EntityData(entity_type="client-id", entity_name=MUTATOR)],
            ops=[alter.OpData(key="controller_mutation_rate", value=2.0, remove=False)])], validate_only=False))
        assert answer.entries[0].error_code == 0
        for _ in range(100):  # Kafka's broker learns the controller's new quota a moment later
            described = await admin.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, describe.REQUEST(components=[
                describe.Component(entity_type="client-id", match_type=0, match=MUTATOR)], strict=True))
            if described.entries:
                break
            time.sleep(0.1)

        def topics(*specs):
            return [creation.CreatableTopic(name=MUTATION_TOPICS[index], num_partitions=count,
                                                 replication_factor=1) for index, count in specs]
        strict = await mutator.request(ApiKey.CREATE_TOPICS, 7, creation.REQUEST(
            topics=topics((0, 20), (1, 5), (2, 1)), timeout_ms=10000))
        seen["create_strict"] = ([(t.name, t.error_code, t.error_message) for t in strict.topics],
                                 0 < strict.throttle_time_ms <= 1500)
        # That connection is now muted; the same client id on fresh connections finds the bucket in debt
        for label, api_key, version, body, results in (
                ("create_partitions_strict", ApiKey.CREATE_PARTITIONS, 3, create_partitions.REQUEST(topics=[
                    create_partitions.Topic(name=MUTATION_TOPICS[0], count=21, assignments=None)],
                    timeout_ms=10000, validate_only=False), lambda answer: answer.results),
                ("create_permissive", ApiKey.CREATE_TOPICS, 5, creation.REQUEST(
                    topics=topics((3, 1)), timeout_ms=10000), lambda answer: answer.topics),
                ("delete_permissive", ApiKey.DELETE_TOPICS, 4, delete_topics.REQUEST(
                    topic_names=[MUTATION_TOPICS[3]], timeout_ms=10000), lambda answer: answer.responses)):
            fresh = await Connection.open("127.0.0.1", broker.port, client_id=MUTATOR)
            try:
                answer = await fresh.request(api_key, version, body)
            finally:
                await fresh.close()
            seen[label] = ([(r.name, r.error_code, getattr(r, "error_message", None)) for r in results(answer)],
                           answer.throttle_time_ms > 0)
        await admin.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, alter.REQUEST(entries=[alter.EntryData(
            entity=[alter.EntityData(entity_type="client-id", entity_name=MUTATOR)],
            ops=[alter.OpData(key="controller_mutation_rate", value=0.0, remove=True)])], validate_only=False))
        await admin.request(ApiKey.DELETE_TOPICS, 4, delete_topics.REQUEST(topic_names=MUTATION_TOPICS[:2],
                                                                          timeout_ms=10000))
    finally:
        await mutator.close()
        await admin.close()
    return seen


@pytest.fixture(scope="module")
def mutations(kafka_broker, weir_process) -> dict:
    import asyncio
    return {name: asyncio.run(_mutations(broker)) for name, broker in (("kafka", kafka_broker),
                                                                         ("weir", weir_process))}


def test_controller_mutation_rate_refuses_and_throttles_as_kafka(mutations):
    weir, kafka = mutations["weir"], mutations["kafka"]
    assert {key: (weir[key], kafka[key]) for key in kafka if weir.get(key) != kafka[key]} == {}
    assert [code for _, code, _ in weir["create_strict"][0]] == [0, 0, 89] and weir["create_strict"][1]
    assert weir["create_partitions_strict"] == ([(MUTATION_TOPICS[0], 89, None)], True)
    assert weir["create_permissive"] == ([(MUTATION_TOPICS[3], 0, None)], True)
    assert weir["delete_permissive"] == ([(MUTATION_TOPICS[3], 0, None)], True)


GREEDY, MODEST = "quota-greedy", "quota-modest"


async def _first_throttle(broker, client_id: str, requests: int) -> int | None:
    """How many Metadata requests ``client_id`` sends before an answer carries a throttle time."""
    connection = await Connection.open("127.0.0.1", broker.port, client_id=client_id)
    try:
        for sent in range(1, requests + 1):
            answer = await connection.request(ApiKey.METADATA, 12, metadata.REQUEST(topics=None))
            if answer.throttle_time_ms > 0:
                return sent
    finally:
        await connection.close()
    return None


async def _request_percentage(broker) -> dict:
    admin = await Connection.open("127.0.0.1", broker.port, client_id="quota-admin")
    entity = [alter.EntityData(entity_type="client-id", entity_name=GREEDY)]
    try:
        answer = await admin.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, alter.REQUEST(entries=[alter.EntryData(
            entity=entity, ops=[alter.OpData(key="request_percentage", value=0.01, remove=False)])],
            validate_only=False))
        assert answer.entries[0].error_code == 0
        for _ in range(100):  # Kafka's broker learns the controller's new quota a moment later
            described = await admin.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, describe.REQUEST(components=[
                describe.Component(entity_type="client-id", match_type=0, match=GREEDY)], strict=True))
            if described.entries:
                break
            time.sleep(0.1)
        greedy = await _first_throttle(broker, GREEDY, 500)
        modest = await _first_throttle(broker, MODEST, 50)
        await admin.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, alter.REQUEST(entries=[alter.EntryData(
            entity=entity, ops=[alter.OpData(key="request_percentage", value=0.0, remove=True)])],
            validate_only=False))
    finally:
        await admin.close()
    return {"greedy": greedy, "modest": modest}


@pytest.mark.parametrize("name", ["weir", "kafka"])
def test_request_percentage_throttles_that_client_id_only(request, name):
    """0.01 % of a request thread over the 10 s window is 1 ms of handler time: a client sending
    Metadata requests one after another is throttled within a few hundred of them (the count depends
    on each broker's speed, so only that it happens is compared: measured at the 1st on Kafka 4.4.0,
    which also counts network thread time, at the ~50th on Weir); another client id is not."""
    import asyncio
    broker = request.getfixturevalue({"weir": "weir_process", "kafka": "kafka_broker"}[name])
    seen = asyncio.run(_request_percentage(broker))
    assert seen["greedy"] is not None and seen["modest"] is None, seen


def _user_quotas_with_kafka_configs(broker) -> list[str]:
    user = ("--entity-type", "users", "--entity-name", "quota-alice")
    both = (*user, "--entity-type", "clients", "--entity-name", "quota-app")
    _configs(broker, "--alter", *user, "--add-config", "consumer_byte_rate=4096,request_percentage=50")
    _configs(broker, "--alter", *both, "--add-config", "producer_byte_rate=8192")
    try:
        seen = []
        for _ in range(100):  # Kafka's broker learns the controller's new quotas a moment later
            seen = [_configs(broker, "--describe", *entity).strip() for entity in (user, both)]
            if all("rate" in text for text in seen):
                break
            time.sleep(0.1)
        return seen
    finally:
        _configs(broker, "--alter", *user, "--delete-config", "consumer_byte_rate,request_percentage")
        _configs(broker, "--alter", *both, "--delete-config", "producer_byte_rate")


def test_kafka_configs_sets_and_describes_user_quotas_as_on_kafka(kafka_broker, weir_process):
    weir, kafka = _user_quotas_with_kafka_configs(weir_process), _user_quotas_with_kafka_configs(kafka_broker)
    assert weir == kafka
    assert weir == ["Quota configs for user-principal 'quota-alice' are consumer_byte_rate=4096.0, "
                    "request_percentage=50.0",
                    "Quota configs for user-principal 'quota-alice', client-id 'quota-app' are "
                    "producer_byte_rate=8192.0"]
