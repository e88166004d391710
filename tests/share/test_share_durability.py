"""Share-partition state survives a broker kill -9: records accepted before the crash never come
back, records held but not accepted come back to a new member, and none is lost."""

import subprocess
import sys
import time

import pytest

from tests.broker_process import REPO, BrokerProcess
from tests.share.test_share_consumers import make_topic, produce, set_group_configs, share_consumer

GROUP = "share-durable"


@pytest.fixture
def broker(tmp_path):
    process = BrokerProcess(tmp_path).start()
    set_group_configs(process, {GROUP: {"share.auto.offset.reset": "earliest"}})
    yield process
    process.stop()


def worker(broker, topic, accept):
    process = subprocess.Popen([sys.executable, "-m", "tests.share.share_worker", broker.bootstrap, GROUP, topic,
                                str(accept)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    held = process.stdout.readline().split()
    accepted = process.stdout.readline().split()
    assert held[:1] == ["HELD"] and accepted[:1] == ["ACCEPTED"], (held, accepted)
    return process, [int(o) for o in held[1:]], [int(o) for o in accepted[1:]]


def test_a_broker_kill_keeps_what_was_accepted_and_loses_nothing(broker):
    topic, total = make_topic(broker), 100
    produce(broker, topic, total)
    member, held, accepted = worker(broker, topic, accept=50)
    try:
        assert held == list(range(total)) and accepted == list(range(50))
    finally:
        member.kill()
        member.wait(30)
    broker.kill()  # SIGKILL: no clean shutdown
    broker.start()
    consumer = share_consumer(broker, GROUP, topic)
    got = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(got) < total - 50:
            for message in consumer.poll(0.5):
                assert message.error() is None, message.error()
                got[message.offset()] = message.delivery_count()
        consumer.commit_sync(30)
    finally:
        consumer.close()
    assert sorted(got) == list(range(50, total))  # nothing accepted again, nothing lost
    # they were delivered once before the crash; that delivery is counted
    assert set(got.values()) == {2}
