"""Share groups (KIP-932) sent raw (our codec) to Weir and to Kafka 4.4.0, one script on both: the
same error codes and messages for stale and future epochs, unknown members and groups, invalid
requests, other protocols knocking on a share group's id (and a share member on a consumer
group's), share sessions that do not exist or skip an epoch, and a record acknowledged that is not
held; the same deliveries: what a fetch acquires and with which delivery count, a RELEASE coming
back counted, the delivery limit archiving, a leaving member's records going to another, and
records coming back to their holder once its acquisition lock (15 s, Kafka's floor) expired;
the same ShareGroupDescribe, DescribeShareGroupOffsets, Alter/DeleteShareGroupOffsets, ListGroups
and DeleteGroups answers.

Where the two differ, the script does not look: Kafka initializes a share-partition asynchronously,
so a first heartbeat's assignment is empty there (the script heartbeats until it is not); its
share.version is 2 (Weir's 1: no dead-letter queues); it may hand redelivered records over several
fetches (the script compares what a member ends up holding).
"""

from __future__ import annotations

import re
import socket
import time
import uuid

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from weir.protocol import records as rec
from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.errors import Errors
from weir.protocol.messages import (alter_share_group_offsets, consumer_group_heartbeat, delete_groups,
                                    delete_share_group_offsets, describe_groups, describe_share_group_offsets,
                                    join_group, list_groups, metadata, produce, share_acknowledge, share_fetch,
                                    share_group_describe, share_group_heartbeat)
from tests.features.raw import ask
from tests.reference.test_differential_consumer_heartbeat import coordinator_ready

ACCEPT, RELEASE, REJECT = 1, 2, 3
LOCK_MS = 15_000  # group.share.min.record.lock.duration.ms by default, on both


class Connection:
    """One connection for a member's requests: a share session lives as long as its connection."""

    def __init__(self, broker):
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=60)
        self.codec = ClientConnection("share-differential")

    def ask(self, api_key, version, body):
        self.send(api_key, version, body)
        return self.receive()

    def send(self, api_key, version, body):
        """A request without waiting for its answer (``receive`` reads it later)."""
        self.sock.sendall(self.codec.send_request(api_key, version, body))

    def receive(self):
        while True:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("the broker closed the connection")
            answers = self.codec.receive_data(data)
            if answers:
                return answers[0]

    def close(self):
        self.sock.close()


class Member:
    def __init__(self, broker, group, topic, topic_id, member_id):
        self.broker, self.group, self.topic, self.topic_id, self.member_id = broker, group, topic, topic_id, member_id
        self.epoch = 0
        self.session_epoch = 0
        self.connection = Connection(broker)
        self.others: list[Member] = []  # heartbeated while this one waits, so that no session times out

    def keep_alive(self):
        for member in (self, *self.others):
            if member.epoch > 0:
                code, _message, epoch, _partitions = member.beat()
                if code == 0:
                    member.epoch = epoch

    def beat(self, epoch=None, topics=None, member_id=None, group=None):
        answer = self.connection.ask(ApiKey.SHARE_GROUP_HEARTBEAT, 1, share_group_heartbeat.REQUEST(
            group_id=group or self.group, member_id=self.member_id if member_id is None else member_id,
            member_epoch=self.epoch if epoch is None else epoch, subscribed_topic_names=topics))
        partitions = None if answer.assignment is None else sorted(
            p for tp in answer.assignment.topic_partitions for p in tp.partitions)
        return answer.error_code, answer.error_message, answer.member_epoch, partitions

    def join(self):
        """Heartbeat until the member is assigned the topic's partitions (Kafka initializes them first)."""
        deadline = time.monotonic() + 60
        code, message, epoch, partitions = self.beat(0, [self.topic])
        while code in (14, 15, 16) or not partitions:
            assert time.monotonic() < deadline, (code, message, epoch, partitions)
            time.sleep(0.2)  # poll interval of a deadline-bounded wait on Kafka's initialization
            if code == 0:
                self.epoch = epoch
                code, message, epoch, partitions = self.beat()
                epoch = epoch if code == 0 else self.epoch
            else:
                code, message, epoch, partitions = self.beat(0, [self.topic])
        self.epoch = epoch
        return code, partitions

    def fetch(self, acks=(), max_wait_ms=5000, epoch=None):
        """(error, [(partition, error, acknowledge error, acquired (first, last, count))...])."""
        session_epoch = self.session_epoch if epoch is None else epoch
        answer = self.connection.ask(ApiKey.SHARE_FETCH, 1, share_fetch.REQUEST(
            group_id=self.group, member_id=self.member_id, share_session_epoch=session_epoch,
            max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
            topics=[share_fetch.FetchTopic(topic_id=self.topic_id, partitions=[
                share_fetch.FetchPartition(partition_index=index, acknowledgement_batches=[
                    share_fetch.AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=[kind])
                    for p, first, last, kind in acks if p == index]) for index in (0, 1)])],
            forgotten_topics_data=[]))
        if epoch is None and answer.error_code == 0:
            self.session_epoch += 1
        partitions = sorted(
            (p.partition_index, p.error_code, p.acknowledge_error_code, p.acknowledge_error_message,
             [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records])
            for t in answer.responses for p in t.partitions)
        if any(acquired for *_, acquired in partitions):
            # Beside a partition with records, Kafka answers another with nothing to say (no records, no
            # error) or leaves it out, as its delayed fetch happened to take that partition's fetch lock
            # in the same round: timing, so such entries are not compared.
            partitions = [p for p in partitions if p[1:] != (0, 0, None, [])]
        return answer.error_code, partitions

    def fetch_until(self, want_records: bool, seconds: float, **kwargs):
        """Fetch until records come (or, without ``want_records``, once): long polls of at most 5 s."""
        deadline = time.monotonic() + seconds
        while True:
            code, partitions = self.fetch(**kwargs)
            if not want_records or any(acquired for *_, acquired in partitions) or time.monotonic() > deadline:
                return code, partitions
            kwargs.pop("acks", None)
            self.keep_alive()

    def fetch_once_initialized(self, seconds: float = 30, **kwargs):
        """A fetch, sent again while nothing is acquired and a partition answers UNKNOWN_TOPIC_OR_PARTITION:
        Kafka initializes a new share group's partitions (InitializeShareGroupState) after the heartbeat
        that assigned them and answers that retriable error until then, as clients expect."""
        deadline = time.monotonic() + seconds
        while True:
            code, partitions = self.fetch(**kwargs)
            uninitialized = any(error == Errors.UNKNOWN_TOPIC_OR_PARTITION for _, error, *_ in partitions)
            if not uninitialized or any(acquired for *_, acquired in partitions) or time.monotonic() > deadline:
                return code, partitions
            self.keep_alive()

    def collect(self, offsets: set[int], seconds: float):
        """Fetch until every one of ``offsets`` was acquired: offset -> delivery count."""
        held: dict[int, int] = {}
        deadline = time.monotonic() + seconds
        while not offsets <= held.keys() and time.monotonic() < deadline:
            code, partitions = self.fetch()
            assert code == 0, (code, partitions)
            for *_, acquired in partitions:
                for first, last, count in acquired:
                    held.update(dict.fromkeys(range(first, last + 1), count))
            self.keep_alive()
        return dict(sorted(held.items()))

    def acknowledge(self, acks, epoch=None):
        session_epoch = self.session_epoch if epoch is None else epoch
        answer = self.connection.ask(ApiKey.SHARE_ACKNOWLEDGE, 2, share_acknowledge.REQUEST(
            group_id=self.group, member_id=self.member_id, share_session_epoch=session_epoch, topics=[
                share_acknowledge.AcknowledgeTopic(topic_id=self.topic_id, partitions=[
                    share_acknowledge.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                        share_fetch.AcknowledgementBatch(first_offset=first, last_offset=last,
                                                         acknowledge_types=[kind])
                        for first, last, kind in acks])])]))
        if epoch is None and answer.error_code == 0:
            self.session_epoch += 1
        return answer.error_code, answer.acquisition_lock_timeout_ms, [
            (p.partition_index, p.error_code, p.error_message) for t in answer.responses for p in t.partitions]


def set_group_configs(broker, group, **configs):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name.replace("_", "."), str(value), incremental_operation=AlterConfigOpType.SET)
        for name, value in configs.items()])
    admin.incremental_alter_configs([resource])[resource].result(30)


def produce_one_batch(broker, topic, count, value=None, partition=0):
    """One batch of ``count`` records (``value``, or job-0, job-1, ...) to ``partition``. A topic just
    created may not be led yet on Kafka (its broker applies the new metadata after CreateTopics
    answered): NOT_LEADER_OR_FOLLOWER and UNKNOWN_TOPIC_OR_PARTITION are retriable, and sent again as
    every producer does."""
    batch = rec.encode_batch([rec.Record(b"job-%d" % i if value is None else value, timestamp=int(time.time() * 1000))
                              for i in range(count)])
    deadline = time.monotonic() + 60
    while True:
        answer = ask(broker, ApiKey.PRODUCE, 9, produce.REQUEST(
            transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[produce.TopicData(
                name=topic, partition_data=[produce.PartitionData(index=partition, records=batch)])]))
        code = answer.responses[0].partition_responses[0].error_code
        if code not in (3, 6) or time.monotonic() > deadline:  # UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER
            break
        time.sleep(0.1)  # retry backoff, as a producer's retry.backoff.ms
    assert code == 0, answer


def topic_id_of(broker, topic):
    answer = ask(broker, ApiKey.METADATA, 12, metadata.REQUEST(topics=[metadata.RequestTopic(name=topic)],
                                                               allow_auto_topic_creation=False))
    return next(t.topic_id for t in answer.topics if t.name == topic)


def without_epochs(answer):
    """A fencing message names epochs, which differ where Kafka bumped one more time while it
    initialized the share-partitions (the script compares the words, and the codes)."""
    code, message = answer[:2]
    return code, re.sub(r"\(\d+\)", "(N)", message) if message else message


def script(broker, topic, run):
    group, consumer_group = f"share-diff-{run}", f"kip848-diff-{run}"
    steps = {}
    set_group_configs(broker, group, share_auto_offset_reset="earliest", share_delivery_count_limit=3,
                      share_record_lock_duration_ms=LOCK_MS)
    produce_one_batch(broker, topic, 10)
    coordinator_ready(broker, group)
    coordinator_ready(broker, consumer_group)
    topic_id = topic_id_of(broker, topic)
    a = Member(broker, group, topic, topic_id, f"member-a-{run}")
    b = Member(broker, group, topic, topic_id, f"member-b-{run}")
    a.others, b.others = [b], [a]
    steps["a joins"] = a.join()
    epoch = a.epoch
    steps["future epoch"] = without_epochs(a.beat(epoch + 5))
    steps["an epoch older than the previous"] = without_epochs(a.beat(1))
    steps["unknown member"] = a.beat(1, member_id="ghost")[:2]
    steps["unknown member leaving"] = a.beat(-1, member_id="ghost")[:2]
    steps["unknown group"] = a.beat(1, group="no-such-share-group")[:2]
    steps["empty member id"] = a.beat(0, [topic], member_id="")[:2]
    steps["join without topics"] = a.beat(0, None, member_id=f"member-c-{run}")[:2]
    steps["epoch -2"] = a.beat(-2)[:2]
    consumer = ask(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, consumer_group_heartbeat.REQUEST(
        group_id=group, member_id="c", member_epoch=0, rebalance_timeout_ms=30000, subscribed_topic_names=[topic],
        topic_partitions=[]))
    steps["consumer protocol on the share group"] = consumer.error_code, consumer.error_message
    classic = ask(broker, ApiKey.JOIN_GROUP, 5, join_group.REQUEST(
        group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id="", group_instance_id=None,
        protocol_type="consumer", protocols=[join_group.Protocol(name="range", metadata=b"")]))
    steps["classic protocol on the share group"] = classic.error_code
    joined = ask(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, consumer_group_heartbeat.REQUEST(
        group_id=consumer_group, member_id="c", member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=[topic], topic_partitions=[]))
    assert joined.error_code == 0, joined
    steps["share member on a consumer group"] = a.beat(0, [topic], group=consumer_group)[:2]
    for version in (5, 6):
        described = ask(broker, ApiKey.DESCRIBE_GROUPS, version, describe_groups.REQUEST(groups=[group])).groups[0]
        steps[f"DescribeGroups v{version}"] = (described.error_code, described.group_state,
                                               getattr(described, "error_message", None))
    listed = ask(broker, ApiKey.LIST_GROUPS, 5, list_groups.REQUEST(states_filter=[], types_filter=["share"]))
    steps["ListGroups share"] = [(g.protocol_type, g.group_state, g.group_type) for g in listed.groups
                                 if g.group_id == group]
    steps["fetch without a session"] = a.fetch(epoch=4)
    steps["acknowledge opening a session"] = a.acknowledge([], epoch=0)
    steps["acknowledge without a session"] = a.acknowledge([], epoch=3)
    # deliveries
    steps["a's first fetch"] = a.fetch_until(True, 30)
    steps["accept 0-3, release 4, reject 5"] = a.acknowledge([(0, 3, ACCEPT), (4, 4, RELEASE), (5, 5, REJECT)])
    steps["acknowledge a session epoch ahead"] = a.acknowledge([], epoch=a.session_epoch + 3)
    steps["released 4 comes back counted"] = a.fetch_until(True, 30)
    steps["release it again"] = a.acknowledge([(4, 4, RELEASE)])
    steps["third delivery"] = a.fetch_until(True, 30)
    steps["the delivery limit archives it"] = a.fetch(acks=[(0, 4, 4, RELEASE)], max_wait_ms=500)
    steps["a rejected record is not held"] = a.fetch(acks=[(0, 5, 5, ACCEPT)], max_wait_ms=0)
    steps["below the start offset"] = a.acknowledge([(1, 1, ACCEPT)])
    code, partitions = b.join()
    steps["b joins"] = code, len(partitions)  # which one: Kafka walks hash sets, Weir a fixed order
    steps["b finds everything held"] = b.fetch(max_wait_ms=500)
    steps["a leaves"] = a.beat(-1)[:3]
    # Kafka may hand records delivered before over several fetches (it throttles redeliveries):
    # what b holds is compared, not how many fetches it took
    steps["a's records go to b"] = b.collect({6, 7, 8, 9}, 30)
    steps["after the lock they come back to b"] = b.collect({6, 7, 8, 9}, LOCK_MS / 1000 + 30)
    steps["b accepts them"] = b.acknowledge([(6, 9, ACCEPT)])
    described = ask(broker, ApiKey.SHARE_GROUP_DESCRIBE, 1, share_group_describe.REQUEST(
        group_ids=[group, "no-such-share-group", consumer_group], include_authorized_operations=False)).groups
    steps["ShareGroupDescribe"] = [
        (g.error_code, g.error_message, g.group_state, g.assignor_name,
         [(m.member_id == b.member_id, m.member_epoch == b.epoch, m.client_id, m.subscribed_topic_names,
           [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions]) for m in g.members])
        for g in sorted(described, key=lambda g: g.group_id)]  # Kafka answers by coordinator, not in order
    steps["offsets"] = describe_offsets(broker, group, topic)
    steps["alter with a member"] = alter_offsets(broker, group, topic, 3)
    steps["b leaves"] = b.beat(-1)[:3]
    steps["alter"] = alter_offsets(broker, group, topic, 3)
    steps["offsets after alter"] = describe_offsets(broker, group, topic)
    steps["alter an unknown topic"] = alter_offsets(broker, group, "no-such-topic", 3)
    steps["delete offsets"] = delete_offsets(broker, group, [topic, "no-such-topic"])
    steps["offsets after delete"] = describe_offsets(broker, group, topic)
    deleted = ask(broker, ApiKey.DELETE_GROUPS, 2, delete_groups.REQUEST(groups_names=[group]))
    steps["DeleteGroups"] = [(r.error_code) for r in deleted.results]
    listed = ask(broker, ApiKey.LIST_GROUPS, 5, list_groups.REQUEST(states_filter=[], types_filter=["share"]))
    steps["ListGroups after"] = [g.group_id for g in listed.groups if g.group_id == group]
    steps.update(edges(broker, topic, topic_id, run))
    return steps


def edges(broker, topic, topic_id, run):
    """Requests a client gets wrong, on a group of their own: each answered as Kafka answers it."""
    group = f"share-edges-{run}"
    set_group_configs(broker, group, share_auto_offset_reset="earliest")
    coordinator_ready(broker, group)
    holder = Member(broker, group, topic, topic_id, f"holder-{run}")
    holder.join()
    steps = {"a fetch by a member id the group does not know": Member(
        broker, group, topic, topic_id, f"stranger-{run}").fetch(max_wait_ms=5000)}
    other = Member(broker, group, topic, topic_id, f"holder-{run}")  # the holder's id on a second connection
    steps["acknowledgements opening a session"] = other.fetch(acks=[(0, 0, 0, ACCEPT)], epoch=0)
    steps["open"] = other.fetch_once_initialized(max_wait_ms=500)
    for name, batch in (("an unknown acknowledge type", (0, 0, 7)), ("first offset after last", (3, 1, ACCEPT)),
                        ("a record another member holds", (0, 0, ACCEPT))):
        steps[name] = other.acknowledge([batch])
    steps["final epoch"] = other.fetch(max_wait_ms=500, epoch=-1)
    steps["after the final epoch"] = other.fetch(max_wait_ms=500)
    return steps


def describe_offsets(broker, group, topic):
    """Kafka 4.4 reports a share-partition's start offset one change behind (0, then 6, where 4 and
    10 were done): Weir reports it so too (broker/share/partition.py, ``reported_start``)."""
    answer = ask(broker, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, describe_share_group_offsets.REQUEST(groups=[
        describe_share_group_offsets.RequestGroup(group_id=group, topics=None)])).groups[0]
    return answer.error_code, [(t.topic_name == topic, p.partition_index, p.start_offset, p.lag, p.error_code)
                               for t in answer.topics for p in t.partitions]


def alter_offsets(broker, group, topic, offset):
    topics = alter_share_group_offsets.REQUEST.fields[1].type.element
    partition = topics.fields[1].type.element
    answer = ask(broker, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter_share_group_offsets.REQUEST(
        group_id=group, topics=[topics.cls(topic_name=topic, partitions=[partition.cls(partition_index=0,
                                                                                       start_offset=offset)])]))
    return answer.error_code, answer.error_message, [
        (t.topic_name, p.partition_index, p.error_code, p.error_message) for t in answer.responses
        for p in t.partitions]


def delete_offsets(broker, group, names):
    topic = delete_share_group_offsets.REQUEST.fields[1].type.element
    answer = ask(broker, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, delete_share_group_offsets.REQUEST(
        group_id=group, topics=[topic.cls(topic_name=name) for name in names]))
    return answer.error_code, [(t.topic_name, t.error_code, t.error_message) for t in answer.responses]


def test_same_answers_as_kafka(weir_process, kafka_broker):
    run = uuid.uuid4().hex[:8]
    topic = f"share-diff-{run}"
    answers = {}
    for broker in (weir_process, kafka_broker):
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
        answers[broker.kind] = script(broker, topic, run)
    weir, kafka = answers["weir"], answers["kafka"]
    differences = {step: (weir[step], kafka[step]) for step in kafka if weir[step] != kafka[step]}
    assert not differences, "\n".join(f"{step}: weir {w} kafka {k}" for step, (w, k) in differences.items())


def shapes_as_members_join(broker, topic, run, members):
    """Members join one at a time; after each join, every member's partitions as its heartbeats
    last gave them: (partitions per member, readers per partition), both sorted (which member reads
    which partition depends on the order each broker walks its members in)."""
    group = f"share-join-{run}"
    coordinator_ready(broker, group)
    topic_id = topic_id_of(broker, topic)
    joined: list[Member] = []
    held: dict[str, list[int]] = {}
    shapes = []
    for index in range(members):
        member = Member(broker, group, topic, topic_id, f"joiner-{index}-{run}")
        member.others = list(joined)
        held[member.member_id] = member.join()[1]
        joined.append(member)
        for each in joined:
            code, _message, epoch, partitions = each.beat()
            assert code == 0, (code, _message)
            each.epoch = epoch
            if partitions is not None:
                held[each.member_id] = partitions
        readers = [sum(p in held[m.member_id] for m in joined) for p in range(2)]
        shapes.append((sorted(len(held[m.member_id]) for m in joined), sorted(readers)))
    for member in joined:
        member.beat(-1)
        member.connection.close()
    return shapes


def test_members_joining_one_by_one_share_the_partitions_as_on_kafka(weir_process, kafka_broker):
    """Seven members on two partitions: each partition read by one member, then two (the third
    member on), three (the fifth), four (the seventh); where the slots do not divide evenly a member
    reads both. Kafka's simple assignor is sticky, so the shape after each join depends on the one
    before it: the whole sequence is compared. On two partitions the shapes do not depend on the
    order the assignor walks the members in (on three they do, on Kafka as on Weir: the assignor may
    leave a slot empty when the only member short of partitions already reads that partition)."""
    run = uuid.uuid4().hex[:8]
    topic = f"share-join-{run}"
    answers = {}
    for broker in (weir_process, kafka_broker):
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
        answers[broker.kind] = shapes_as_members_join(broker, topic, run, 7)
    assert answers["weir"] == answers["kafka"]
    assert answers["weir"][2] == ([1, 1, 2], [2, 2])
    assert answers["weir"][-1] == ([1, 1, 1, 1, 1, 1, 2], [4, 4])
