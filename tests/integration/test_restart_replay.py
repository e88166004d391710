"""A restart replays about the live state of __transaction_state, not its history, at Kafka's
default 100 MiB internal segment size: the cleaner rolls the active segment once it outgrows the
clean part and compacts it (broker/log/cleaner.py)."""

import re

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess

TRANSACTIONS = 800  # three __transaction_state records each: about 330 KiB in one partition


def replayed(broker) -> int:
    for line in reversed(broker.lines):
        found = re.search(r"transaction coordinator: replayed (\d+) record", line)
        if found:
            return int(found.group(1))
    raise AssertionError("no replay line:\n" + "".join(broker.lines[-20:]))


def test_restart_after_kill_replays_the_compacted_state(tmp_path):
    # Only the cleaner's idle backoff is shortened (15 s by default) so the test need not wait.
    broker = BrokerProcess(tmp_path / "data", overrides={"log.cleaner.backoff.ms": "200"}).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(10)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "one-id", "linger.ms": 0})
        producer.init_transactions(15)
        for i in range(TRANSACTIONS):
            producer.begin_transaction()
            producer.produce("orders", b"order-%d" % i)
            producer.commit_transaction(15)
        assert broker.wait_for_log(": cleaned [", timeout=30), "".join(broker.lines[-20:])
        broker.kill()
        broker.start()
        history = 3 * TRANSACTIONS
        print(f"\nreplayed {replayed(broker)} of {history} records after kill -9")
        assert replayed(broker) < history / 3, (replayed(broker), history)
        again = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "one-id"})
        again.init_transactions(15)  # the id's state survived compaction and the kill
        again.begin_transaction()
        again.produce("orders", b"after")
        again.commit_transaction(15)
    finally:
        broker.stop()
