"""The real broker compacts a compacted topic in the background; confluent-kafka reads the result
(gaps, rewritten and emptied batches, a tombstone) and a transactional producer's aborted records
are gone, read_uncommitted."""

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess

KEYS = [b"k%d" % i for i in range(8)]
ROUNDS = 30


def consume_everything(bootstrap, topic, end_offset, **config):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False,
                         "isolation.level": "read_uncommitted",
                         "auto.offset.reset": "earliest", **config})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    position = 0
    while position < end_offset and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        assert message.error() is None, message.error()
        got.append((message.offset(), message.key(), message.value()))
        position = message.offset() + 1
    consumer.close()
    return got


def test_broker_compacts_a_topic_and_a_consumer_reads_the_compacted_log(tmp_path):
    broker = BrokerProcess(tmp_path / "data", overrides={"log.cleaner.backoff.ms": "100"}).start()
    try:
        topic = "compacted"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        configs = {"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.1"}
        admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(10)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 0})
        for round_ in range(ROUNDS):
            for key in KEYS:
                producer.produce(topic, key=key, value=b"%s-%d" % (key, round_))
            producer.flush(10)
        producer.produce(topic, key=KEYS[0], value=None)  # a tombstone
        producer.flush(10)
        aborting = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "aborter"})
        aborting.init_transactions(10)
        aborting.begin_transaction()
        aborting.produce(topic, key=b"aborted", value=b"never")
        aborting.flush(10)
        aborting.abort_transaction(10)
        for key in KEYS[1:]:  # more traffic: the aborted transaction lands in a sealed segment
            for _round in range(10):
                producer.produce(topic, key=key, value=b"%s-final" % key)
            producer.flush(10)
        produced = ROUNDS * len(KEYS) + 1 + 2 + 10 * (len(KEYS) - 1)
        assert broker.wait_for_log("compacted-0: cleaned", timeout=30)
        deadline = time.monotonic() + 30  # the cleaner passes again (dirty ratio 0.1) until it catches up

        def superseded(records):
            return [(o, k, v) for o, k, v in records if k == b"aborted" or v is not None and v.endswith(b"-0")]
        got = consume_everything(broker.bootstrap, topic, produced)
        while superseded(got) and time.monotonic() < deadline:
            time.sleep(0.2)
            got = consume_everything(broker.bootstrap, topic, produced)
        assert superseded(got) == []
        offsets = [offset for offset, _k, _v in got]
        assert offsets == sorted(set(offsets)) and len(got) < produced / 4, (len(got), produced)
        state = {}
        for _offset, key, value in got:
            state[key] = value
        assert state.pop(KEYS[0], "absent") in (None, "absent"), "the tombstone wins over every value of k0"
        assert state == {key: b"%s-final" % key for key in KEYS[1:]}
    finally:
        broker.stop()
