"""ShareFetch's limits on Weir and Kafka 4.4.0, raw (our codec), on a partition of 1,000 records
in batches of 50: ``max_records`` (whole batches; record_limit mode cuts inside one),
``batch_size`` (the acquired ranges cut at batch boundaries into pieces of at least that many
records), ``max_bytes`` (at least one batch) and ``min_bytes`` (the fetch waits ``max_wait_ms``
for bytes that do not come, then takes what there is). Each case is a new share group's first
fetch; the acquired ranges and the size of the records answered must be the same. And Kafka
4.4's throttled redelivery (KAFKA-17541): a batch released again and again comes back half at a
time from a delivery count of half the limit on, and each record alone on its last delivery. And a
RENEW refused where the group's ``share.renew.acknowledge.enable`` is false."""

from __future__ import annotations

import time
import uuid

from confluent_kafka.admin import NewTopic

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import share_acknowledge, share_fetch
from tests.reference.test_differential_consumer_heartbeat import coordinator_ready
from tests.reference.test_differential_share_groups import (ACCEPT, RELEASE, Member, produce_one_batch,
                                                             set_group_configs, topic_id_of)
from tests.tools.tools import create_topics

RECORD_LIMIT = 1  # share_acquire_mode
CASES = {
    "max_records inside a batch": dict(max_records=10, batch_size=10),
    "record_limit mode": dict(max_records=10, batch_size=10, share_acquire_mode=RECORD_LIMIT),
    "batch_size of two batches": dict(max_records=500, batch_size=100),
    "batch_size below a batch": dict(max_records=75, batch_size=20),
    "max_bytes below a batch": dict(max_records=500, batch_size=500, max_bytes=1000),
    "min_bytes never reached": dict(max_records=500, batch_size=500, min_bytes=1_000_000, max_wait_ms=2000),
}


def scenario(broker) -> dict:
    topic = f"share-limits-{uuid.uuid4().hex[:8]}"
    create_topics(broker.bootstrap, NewTopic(topic, 1, 1))
    for _ in range(20):
        produce_one_batch(broker, topic, 50, b"x" * 100)
    topic_id = topic_id_of(broker, topic)
    answers = {}
    for name, limits in CASES.items():
        group = f"share-limits-{uuid.uuid4().hex[:8]}"
        set_group_configs(broker, group, share_auto_offset_reset="earliest")
        coordinator_ready(broker, group)
        member = Member(broker, group, topic, topic_id, f"limits-{uuid.uuid4().hex[:8]}")
        member.join()
        request = dict(min_bytes=1, max_bytes=1 << 20, max_wait_ms=10_000) | limits
        began = time.monotonic()
        answer = member.connection.ask(ApiKey.SHARE_FETCH, 2, share_fetch.REQUEST(
            group_id=group, member_id=member.member_id, share_session_epoch=0, forgotten_topics_data=[],
            topics=[share_fetch.FetchTopic(topic_id=topic_id, partitions=[
                share_fetch.FetchPartition(partition_index=0, acknowledgement_batches=[])])], **request))
        waited = time.monotonic() - began
        answers[name] = (answer.error_code, [
            (p.partition_index, p.error_code, [(a.first_offset, a.last_offset, a.delivery_count)
                                               for a in p.acquired_records], len(p.records or b""))
            for t in answer.responses for p in t.partitions])
        if "min_bytes" in limits:
            assert waited >= limits["max_wait_ms"] / 1000 * 0.95, (broker.kind, name, waited)
        member.connection.close()
    return answers


def test_share_fetch_limits_as_kafka_applies_them(weir_process, kafka_broker):
    weir, kafka = scenario(weir_process), scenario(kafka_broker)
    assert weir == kafka
    assert weir["record_limit mode"][1][0][2] == [(0, 9, 1)]
    assert weir["max_records inside a batch"][1][0][2] == [(0, 49, 1)]
    assert [r[:2] for r in weir["batch_size of two batches"][1][0][2]] == [(0, 99), (100, 199), (200, 299),
                                                                           (300, 399), (400, 499)]
    assert weir["max_bytes below a batch"][1][0][2] == [(0, 49, 1)]


def redeliveries(broker) -> list[list[tuple[int, int, int]]]:
    """What each fetch acquires when a member releases everything it gets, to the delivery limit
    (5, the default on both) of a batch of ten."""
    topic, group = f"share-throttle-{uuid.uuid4().hex[:8]}", f"share-throttle-{uuid.uuid4().hex[:8]}"
    create_topics(broker.bootstrap, NewTopic(topic, 1, 1))
    produce_one_batch(broker, topic, 10)  # one batch: Kafka's throttling counts in batches
    set_group_configs(broker, group, share_auto_offset_reset="earliest")
    coordinator_ready(broker, group)
    member = Member(broker, group, topic, topic_id_of(broker, topic), f"throttle-{uuid.uuid4().hex[:8]}")
    member.join()
    fetches = []
    while len(fetches) < 30:
        _code, partitions = member.fetch(max_wait_ms=1000)
        acquired = [batch for partition in partitions for batch in partition[4]]
        fetches.append(acquired)
        if not acquired:
            break
        member.acknowledge([(first, last, RELEASE) for first, last, _count in acquired])
    member.connection.close()
    return fetches


def test_redelivery_is_throttled_as_kafka_throttles_it(weir_process, kafka_broker):
    weir = redeliveries(weir_process)
    assert weir == redeliveries(kafka_broker)
    assert weir == [[(0, 9, 1)], [(0, 9, 2)], [(0, 9, 3)], [(0, 4, 4)], *([(i, i, 5)] for i in range(5)),
                    [(5, 9, 4)], *([(i, i, 5)] for i in range(5, 10)), []]


RENEW = 4


def renew_where_disabled(broker) -> list:
    topic, group = f"share-renew-{uuid.uuid4().hex[:8]}", f"share-renew-{uuid.uuid4().hex[:8]}"
    create_topics(broker.bootstrap, NewTopic(topic, 1, 1))
    produce_one_batch(broker, topic, 3)
    set_group_configs(broker, group, share_auto_offset_reset="earliest", share_renew_acknowledge_enable="false")
    coordinator_ready(broker, group)
    topic_id = topic_id_of(broker, topic)
    member = Member(broker, group, topic, topic_id, f"renew-{uuid.uuid4().hex[:8]}")
    member.join()
    steps = [member.fetch_until(True, 30)[1][0][4]]
    answer = member.connection.ask(ApiKey.SHARE_ACKNOWLEDGE, 2, share_acknowledge.REQUEST(
        group_id=group, member_id=member.member_id, share_session_epoch=member.session_epoch, is_renew_ack=True,
        topics=[share_acknowledge.AcknowledgeTopic(topic_id=topic_id, partitions=[
            share_acknowledge.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                share_fetch.AcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[RENEW])])])]))
    member.session_epoch += 1
    steps.append((answer.error_code, [(p.error_code, p.error_message) for t in answer.responses for p in t.partitions]))
    steps.append(member.acknowledge([(0, 2, ACCEPT)]))  # still held: the refused RENEW changed nothing
    member.connection.close()
    return steps


def test_renew_refused_where_the_group_disables_it(weir_process, kafka_broker):
    weir = renew_where_disabled(weir_process)
    assert weir == renew_where_disabled(kafka_broker)
    assert weir[1] == (0, [(121, "Renewing acquisition locks is not enabled for the group.")])  # INVALID_RECORD_STATE
