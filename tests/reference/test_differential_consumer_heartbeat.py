"""ConsumerGroupHeartbeat, ConsumerGroupDescribe, DescribeGroups and OffsetCommit/OffsetFetch v9 sent
raw (our codec) to Weir and to Kafka 4.4.0, one script on both: the same error codes and messages
for bad epochs, unknown members and groups, invalid requests, regexes RE2/J refuses (with its
words) and accepts, an unknown assignor; the same epochs for a join (2: a new group is at epoch 1 and the first member's
subscription bumps it), a rejoin under the same member id, and a leave. TxnOffsetCommit from the
member (KIP-447 with member epochs): a stale or future epoch is ILLEGAL_GENERATION on both.
OffsetCommit from an older member epoch (KIP-1251): accepted for partitions held since then, and
one partition given up since refuses the whole request."""

from __future__ import annotations

import time
import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import (add_offsets_to_txn, consumer_group_describe, consumer_group_heartbeat,
                                    describe_groups, end_txn, find_coordinator, init_producer_id, offset_commit,
                                    offset_fetch, txn_offset_commit)
from tests.features.raw import ask

HB = consumer_group_heartbeat


def beat(broker, group, member_id, epoch, *, topics=None, regex=None, owned=None, rebalance_timeout=-1,
         assignor=None, version=1):
    request = HB.REQUEST(group_id=group, member_id=member_id, member_epoch=epoch, instance_id=None,
                         rebalance_timeout_ms=rebalance_timeout, subscribed_topic_names=topics,
                         subscribed_topic_regex=regex, server_assignor=assignor,
                         topic_partitions=None if owned is None else [])
    answer = ask(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, version, request)
    partitions = None if answer.assignment is None else sorted(
        p for tp in answer.assignment.topic_partitions for p in tp.partitions)
    return answer.error_code, answer.error_message, answer.member_epoch, partitions


def coordinator_ready(broker, group, key_type=0) -> None:
    """FindCoordinator until the group's (key type 1: the transaction's) coordinator answers (Kafka
    creates and loads __consumer_offsets or __transaction_state first)."""
    deadline = time.monotonic() + 60
    while True:
        answer = ask(broker, ApiKey.FIND_COORDINATOR, 4, find_coordinator.REQUEST(key_type=key_type,
                                                                                 coordinator_keys=[group]))
        if answer.coordinators[0].error_code == 0:
            return
        assert time.monotonic() < deadline, answer
        time.sleep(0.2)  # poll interval of a deadline-bounded wait on the other broker's loading


def topic_assignable(broker, topic) -> None:
    """Heartbeat a member of a throwaway group until the broker assigns it the topic's partitions.

    Kafka's group coordinator sees a topic through its metadata image, a moment after CreateTopics
    has answered; a group joined before then is assigned nothing, and its group epoch moves again
    when the topic shows up. The script starts once both brokers can assign the topic."""
    group, member = f"probe-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    coordinator_ready(broker, group)
    deadline = time.monotonic() + 60
    code, _message, epoch, partitions = beat(broker, group, member, 0, topics=[topic], owned=[],
                                             rebalance_timeout=30_000)
    while code != 0 or not partitions:
        assert time.monotonic() < deadline, (code, _message, epoch, partitions)
        time.sleep(0.2)  # poll interval of a deadline-bounded wait on the broker's metadata
        code, _message, new_epoch, partitions = beat(broker, group, member, epoch if code == 0 else 0,
                                                     **({"owned": []} if code == 0 else
                                                        {"topics": [topic], "owned": [], "rebalance_timeout": 30_000}))
        epoch = new_epoch if code == 0 else epoch
    beat(broker, group, member, -1)


def script(broker, topic):
    group = f"kip848-diff-{uuid.uuid4().hex[:8]}"
    member = str(uuid.uuid4())
    join = dict(topics=[topic], owned=[], rebalance_timeout=30_000)
    coordinator_ready(broker, group)
    deadline = time.monotonic() + 60
    # 14, 15, 16: loading, not available, not coordinator
    while (joined := beat(broker, group, member, 0, **join))[0] in (14, 15, 16):
        assert time.monotonic() < deadline, joined
        time.sleep(0.2)
    epoch = joined[2]
    steps = {
        "join": joined,
        "steady": _relative(beat(broker, group, member, epoch, owned=[]), epoch),
        "rejoin with its id": _relative(beat(broker, group, member, 0, **join), epoch),  # as after a fencing
        "future epoch": beat(broker, group, member, epoch + 3, owned=[])[0],
        "unknown member": beat(broker, group, "stranger", epoch, owned=[]),
        "unknown group": beat(broker, "no-such-" + group, member, 1, owned=[]),
        "bad epoch": beat(broker, group, member, -3),
        "no rebalance timeout": beat(broker, group, str(uuid.uuid4()), 0, topics=[topic], owned=[]),
        "owned on join": beat(broker, group, str(uuid.uuid4()), 0, topics=[topic], rebalance_timeout=1000),
        "no subscription": beat(broker, group, str(uuid.uuid4()), 0, owned=[], rebalance_timeout=1000),
        "empty member id": beat(broker, group, "", 0, **join),
        "unknown assignor": beat(broker, group, str(uuid.uuid4()), 0, assignor="sticky", **join),
    }
    # a first member subscribed to nothing bumps nothing: it gets the new group's epoch, 1
    steps["first member without topics"] = beat(broker, f"{group}-none", str(uuid.uuid4()), 0, topics=[], owned=[],
                                                 rebalance_timeout=1000)
    steps.update(regexes(broker, f"{group}-rx", topic))
    steps.update(older_epoch_commits(broker, f"{group}-older", topic))
    described = ask(broker, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, consumer_group_describe.REQUEST(
        group_ids=[group, "no-such-" + group], include_authorized_operations=False)).groups
    shift = lambda g: epoch if g.error_code == 0 else 0  # noqa: E731
    steps["describe"] = sorted((g.group_id, g.error_code, g.error_message, g.group_state, g.group_epoch - shift(g),
                                g.assignment_epoch - shift(g), g.assignor_name,
                                [(m.member_epoch - epoch, m.member_type) for m in g.members]) for g in described)
    for version in (5, 6):
        old = ask(broker, ApiKey.DESCRIBE_GROUPS, version, describe_groups.REQUEST(groups=[group])).groups[0]
        steps[f"describe groups v{version}"] = (old.error_code, old.error_message, old.group_state, old.protocol_type)
    commit = offset_commit.REQUEST(group_id=group, generation_id_or_member_epoch=epoch - 1, member_id=member, topics=[
        offset_commit.RequestTopic(name=topic, partitions=[offset_commit.RequestPartition(
            partition_index=0, committed_offset=0, committed_metadata=None)])])
    steps["stale commit"] = [p.error_code for t in ask(broker, ApiKey.OFFSET_COMMIT, 9, commit).topics
                             for p in t.partitions]
    commit.generation_id_or_member_epoch = epoch
    steps["commit v8"] = [p.error_code for t in ask(broker, ApiKey.OFFSET_COMMIT, 8, commit).topics
                          for p in t.partitions]
    steps["commit"] = [p.error_code for t in ask(broker, ApiKey.OFFSET_COMMIT, 9, commit).topics
                       for p in t.partitions]
    fetch = offset_fetch.REQUEST(groups=[offset_fetch.RequestGroup(group_id=group, member_id=member,
                                                                   member_epoch=epoch - 1, topics=None)],
                                 require_stable=False)
    steps["stale fetch"] = ask(broker, ApiKey.OFFSET_FETCH, 9, fetch).groups[0].error_code
    fetch.groups[0].member_epoch = epoch
    answer = ask(broker, ApiKey.OFFSET_FETCH, 9, fetch).groups[0]
    steps["fetch"] = (answer.error_code, [(p.partition_index, p.committed_offset) for t in answer.topics
                                          for p in t.partitions])
    steps.update(transactional_commits(broker, group, member, epoch, topic))
    steps["leave"] = beat(broker, group, member, -1)[:3]
    steps["after leave"] = beat(broker, group, member, epoch, owned=[])
    return {step: _without_ids(answer, group, member) for step, answer in steps.items()}


def _heartbeat_owning(broker, group, member, epoch, owned, topic, topic_id):
    """A heartbeat reporting ``owned`` partitions; (code, epoch, topic id, assigned partitions or None)."""
    request = HB.REQUEST(group_id=group, member_id=member, member_epoch=epoch, instance_id=None,
                         rebalance_timeout_ms=30_000 if epoch == 0 else -1,
                         subscribed_topic_names=[topic] if epoch == 0 else None, subscribed_topic_regex=None,
                         server_assignor=None, topic_partitions=[] if epoch == 0 else [
                             HB.TopicPartitions(topic_id=topic_id, partitions=sorted(owned))] if owned else [])
    answer = ask(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, request)
    if answer.assignment is None:
        return answer.error_code, answer.member_epoch, topic_id, None
    assigned = answer.assignment.topic_partitions
    return (answer.error_code, answer.member_epoch, assigned[0].topic_id if assigned else topic_id,
            sorted(p for tp in assigned for p in tp.partitions))


def older_epoch_commits(broker, group, topic):
    """KIP-1251 and how a refusal spreads: member a holds all 3 partitions from its first epoch, b
    joins and a gives some up; a's commits from its first epoch are accepted for the partitions it
    kept and refuse the whole request when one it gave up is among them; b's from a's first epoch
    are refused (b holds its partitions since a later one)."""
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    code, first_epoch, topic_id, held_a = _heartbeat_owning(broker, group, a, 0, [], topic, None)
    assert code == 0 and held_a == [0, 1, 2], (code, held_a)
    code, epoch_b, _, held_b = _heartbeat_owning(broker, group, b, 0, [], topic, topic_id)
    epoch_a, held_b = first_epoch, held_b or []
    deadline = time.monotonic() + 30
    while not (held_b and epoch_a == epoch_b and sorted(held_a + held_b) == [0, 1, 2]):
        assert time.monotonic() < deadline, (epoch_a, held_a, epoch_b, held_b)
        time.sleep(0.2)  # poll interval: Kafka computes a target at most once a second (assignment interval)
        _, epoch_a, _, assigned = _heartbeat_owning(broker, group, a, epoch_a, held_a, topic, topic_id)
        held_a = held_a if assigned is None else assigned
        _, epoch_b, _, assigned = _heartbeat_owning(broker, group, b, epoch_b, held_b, topic, topic_id)
        held_b = held_b if assigned is None else assigned

    def commit(member, epoch, partitions):
        request = offset_commit.REQUEST(group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
                                        topics=[offset_commit.RequestTopic(name=topic, partitions=[
                                            offset_commit.RequestPartition(partition_index=p, committed_offset=1,
                                                                           committed_metadata=None)
                                            for p in partitions])])
        return [p.error_code for t in ask(broker, ApiKey.OFFSET_COMMIT, 9, request).topics for p in t.partitions]
    return {"older epoch, kept partitions": commit(a, first_epoch, held_a),
            "older epoch, a partition given up": commit(a, first_epoch, [held_a[0], held_b[0]]),
            "older epoch than the partitions'": commit(b, first_epoch, held_b),
            "a's epoch moved on": epoch_a > first_epoch}


#: RE2/J syntax (Kafka's engine): refused with its words, or accepted where Python's re would differ
REGEXES = ["(", "a)", "[a", "a\\", "*a", "x**", "a{2,1}", "[z-a]", "(?P<>a)", "(a)\\1", "a(?=b)", "\\Z",
           "(?P<n>a)(?P<n>b)", "\\p{Greek}+", "[[:alpha:]]+", "\\Qa.b\\E", "\\pN"]


def regexes(broker, group, topic):
    """Each of REGEXES joined by a member of ``group`` (code and message), then a member whose regex
    matches ``topic`` only with RE2's POSIX classes, heartbeating until its partitions come (Kafka
    resolves a regex in the background)."""
    steps = {f"regex {pattern}": beat(broker, group, str(uuid.uuid4()), 0, regex=pattern, owned=[],
                                      rebalance_timeout=1000)[:2] for pattern in REGEXES}
    member, pattern = str(uuid.uuid4()), topic.replace("-", "[[:punct:]]", 1) + "$"
    code, message, epoch, partitions = beat(broker, f"{group}-posix", member, 0, regex=pattern, owned=[],
                                            rebalance_timeout=30_000)
    deadline = time.monotonic() + 30
    while code == 0 and not partitions and time.monotonic() < deadline:
        time.sleep(0.2)  # poll interval of a deadline-bounded wait on the broker's regex resolution
        code, message, epoch, partitions = beat(broker, f"{group}-posix", member, epoch, owned=[])
    steps["regex with a POSIX class"] = (code, message, partitions)
    return steps


def _until_ready(broker, api_key, version, request, code=lambda answer: answer.error_code):
    """The first answer that is not a coordinator still loading or a transaction still ending."""
    deadline = time.monotonic() + 60
    while (answer := ask(broker, api_key, version, request)) and code(answer) in (14, 15, 16, 51):
        assert time.monotonic() < deadline, answer
        time.sleep(0.2)  # poll interval of a deadline-bounded wait on the broker's coordinators
    return answer


def transactional_commits(broker, group, member, epoch, topic):
    """TxnOffsetCommit v3 of partition 0 inside one transaction, with the member's epoch, stale and
    future ones, an unknown member, and no group metadata at all; then the transaction aborts."""
    txn = f"{group}-txn"
    coordinator_ready(broker, txn, key_type=1)
    producer = _until_ready(broker, ApiKey.INIT_PRODUCER_ID, 4, init_producer_id.REQUEST(
        transactional_id=txn, transaction_timeout_ms=60_000))
    pid, producer_epoch = producer.producer_id, producer.producer_epoch
    added = _until_ready(broker, ApiKey.ADD_OFFSETS_TO_TXN, 3, add_offsets_to_txn.REQUEST(
        transactional_id=txn, producer_id=pid, producer_epoch=producer_epoch, group_id=group))
    steps = {"txn add offsets": added.error_code}
    for step, member_id, generation in [("txn commit future epoch", member, epoch + 1),
                                        ("txn commit stale epoch", member, epoch - 1),
                                        ("txn commit unknown member", "stranger", epoch),
                                        ("txn commit without group metadata", "", -1),
                                        ("txn commit", member, epoch)]:
        answer = ask(broker, ApiKey.TXN_OFFSET_COMMIT, 3, txn_offset_commit.REQUEST(
            transactional_id=txn, group_id=group, producer_id=pid, producer_epoch=producer_epoch,
            generation_id_or_member_epoch=generation, member_id=member_id, group_instance_id=None,
            topics=[txn_offset_commit.RequestTopic(name=topic, partitions=[txn_offset_commit.RequestPartition(
                partition_index=p, committed_offset=7, committed_metadata=None) for p in (0, 1)])]))
        steps[step] = [p.error_code for t in answer.topics for p in t.partitions]
    steps["txn abort"] = _until_ready(broker, ApiKey.END_TXN, 3, end_txn.REQUEST(
        transactional_id=txn, producer_id=pid, producer_epoch=producer_epoch, committed=False)).error_code
    return steps


def _relative(answer, epoch):
    code, message, member_epoch, partitions = answer
    return code, message, member_epoch - epoch, partitions


def _without_ids(answer, group, member):
    """Generated group and member ids differ from broker to broker: the answers compare without them."""
    if isinstance(answer, str):
        return answer.replace(group, "GROUP").replace(member, "MEMBER")
    if isinstance(answer, (list, tuple)):
        return type(answer)(_without_ids(item, group, member) for item in answer)
    return answer


def test_same_answers_as_kafka(weir_process, kafka_broker):
    topic = f"kip848-diff-{uuid.uuid4().hex[:8]}"
    answers = {}
    for broker in (weir_process, kafka_broker):
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
        topic_assignable(broker, topic)
        answers[broker.kind] = script(broker, topic)
    weir, kafka = answers["weir"], answers["kafka"]
    differences = {step: (weir[step], kafka[step]) for step in kafka if weir[step] != kafka[step]}
    assert not differences, "\n".join(f"{step}: weir {w} kafka {k}" for step, (w, k) in differences.items())
