"""Share acknowledgements while the disk is full, over the wire (raw ShareFetch/ShareAcknowledge to
a broker process, its writes failing through ``disk_full()``). Found by the chaos campaign: an
acknowledgement answered with an error stayed applied, so its records were never delivered again.
As on Kafka 4.4 (SharePartition rolls back a change whose state write failed), the records stay
with the member: its retry once the disk is fine succeeds, or, without a retry, they come back
counted once their lock expires, and nothing is accepted twice."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import weir
from tests.reference.test_differential_share_groups import Member, produce_one_batch, set_group_configs, topic_id_of

ACCEPT = 1
LOCK_MS = 3000
COORDINATOR_NOT_AVAILABLE = 15
SETTINGS = {"group.share.min.record.lock.duration.ms": 1000, "group.share.record.lock.duration.ms": LOCK_MS}


WRITE_FAILED = "Error in write state RPC. Exhausted max retries to complete write state RPC without success."


@pytest.fixture(scope="module")
def broker():
    with weir.run_broker(SETTINGS) as running:
        yield running


@pytest.fixture
def member(broker, request):
    """A member of its own share group holding offsets 0-4 of a new topic (delivered once)."""
    name = request.node.name[-24:]
    topic = broker.create_topic(f"jobs-{name}", partitions=1)
    set_group_configs(SimpleNamespace(bootstrap=broker.bootstrap_servers), f"g-{name}",
                      share_auto_offset_reset="earliest")
    produce_one_batch(broker, topic, 5)
    joined = Member(broker, f"g-{name}", topic, topic_id_of(broker, topic), f"member-{name}")
    joined.join()
    assert joined.collect(set(range(5)), 60) == dict.fromkeys(range(5), 1)
    yield joined
    broker.disk_ok()
    joined.connection.close()


def acknowledge(member, first, last):
    code, _lock_ms, partitions = member.acknowledge([(first, last, ACCEPT)])
    assert code == 0, partitions
    return [(error, message) for _index, error, message in partitions]


def test_the_members_retry_succeeds_once_the_disk_is_fine(broker, member):
    broker.disk_full()
    assert acknowledge(member, 0, 4) == [(COORDINATOR_NOT_AVAILABLE, WRITE_FAILED)]
    broker.disk_ok()
    assert acknowledge(member, 0, 4) == [(0, None)]  # the records were still the member's
    code, partitions = member.fetch_until(False, 0, max_wait_ms=LOCK_MS + 1000)  # past the lock: nothing back
    assert code == 0 and not any(acquired for *_, acquired in partitions), partitions


def test_records_not_acknowledged_again_come_back_counted(broker, member):
    broker.disk_full()
    assert acknowledge(member, 0, 4) == [(COORDINATOR_NOT_AVAILABLE, WRITE_FAILED)]
    broker.disk_ok()
    assert member.collect(set(range(5)), 60) == dict.fromkeys(range(5), 2)  # after the lock: again, counted
    assert acknowledge(member, 0, 4) == [(0, None)]
    code, partitions = member.fetch_until(False, 0, max_wait_ms=LOCK_MS + 1000)
    assert code == 0 and not any(acquired for *_, acquired in partitions), partitions  # accepted once
