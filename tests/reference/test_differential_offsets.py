"""The last stable offset and pending transactional offsets, on Weir and on Apache Kafka."""

from weir.protocol.errors import Errors
from tests.reference.differential import Deviation, codes, differential, log_of
from tests.reference.producer import TransactionalProducer

READ_UNCOMMITTED, READ_COMMITTED = 0, 1
LATEST, EARLIEST = -1, -2


async def list_offsets_around_a_transaction(wire, t):
    topic, txn = wire.named("lso"), wire.named("lso-txn")
    await wire.find_coordinator(txn, "transaction")
    await wire.create_topic(topic)
    t.add("plain produce", await wire.produce(topic, [b"plain"]))
    producer = TransactionalProducer(wire, txn)
    t.add("init", await producer.init())
    t.add("add partition", await producer.add_partitions(topic))
    t.add("produce two in the transaction", await producer.produce(topic, [b"t1", b"t2"], 0))
    for state in ("open", "committed"):
        t.add(f"{state}: latest, read_uncommitted", await wire.list_offsets(topic, READ_UNCOMMITTED))
        t.add(f"{state}: latest, read_committed", await wire.list_offsets(topic, READ_COMMITTED))
        t.add(f"{state}: earliest, read_committed", await wire.list_offsets(topic, READ_COMMITTED, EARLIEST))
        t.add(f"{state}: read_committed fetch", await wire.fetch(topic, READ_COMMITTED))
        t.add(f"{state}: read_uncommitted fetch", await wire.fetch(topic, READ_UNCOMMITTED))
        if state == "open":
            t.add("commit", await producer.end(True))
            await wire.wait_for_lso(topic, 4)  # past the commit marker at offset 3


def _offset(answer):
    return answer["topics"][0]["partitions"][0]["offset"]


def _partition(answer):
    return answer["responses"][0]["partitions"][0]


async def test_c_list_offsets_latest_under_both_isolation_levels_around_a_transaction(
        broker_at_level, kafka_at_level, client_transaction_version):
    def facts(steps):
        assert [_offset(steps[f"open: {step}"]) for step in ("latest, read_uncommitted", "latest, read_committed",
                                                             "earliest, read_committed")] == [3, 1, 0]
        assert [_offset(steps[f"committed: {step}"]) for step in ("latest, read_uncommitted",
                                                                  "latest, read_committed")] == [4, 4]
        open_fetch = _partition(steps["open: read_committed fetch"])
        assert (open_fetch["high_watermark"], open_fetch["last_stable_offset"]) == (3, 1)
        assert log_of(steps["open: read_committed fetch"]) == [b"plain"]
        assert log_of(steps["committed: read_committed fetch"]) == [b"plain", b"t1", b"t2", "COMMIT"]
        marker = _partition(steps["committed: read_committed fetch"])["records"][-1]
        assert marker["producer_epoch"] == steps["init"]["producer_epoch"] + (client_transaction_version == 2)
    await differential(broker_at_level, kafka_at_level, list_offsets_around_a_transaction, facts=facts,
                       client_transaction_version=client_transaction_version)


async def require_stable_with_a_pending_transactional_offset(wire, t):
    topic, txn, group = wire.named("stable"), wire.named("stable-txn"), wire.named("stable-group")
    await wire.find_coordinator(txn, "transaction")
    t.add("find group coordinator", await wire.find_coordinator(group, "group"))
    await wire.create_topic(topic)
    producer = TransactionalProducer(wire, txn)
    first_epoch = t.add("init", await producer.init()).producer_epoch
    for outcome, offset in (("committed", 3), ("aborted", 7)):  # at version 2 the second at the bumped epoch
        t.add(f"{outcome}: add offsets", await producer.add_offsets(group))
        t.add(f"{outcome}: txn offset commit", await producer.txn_offset_commit(group, topic, offset))
        t.add(f"{outcome}: pending, require_stable", await wire.offset_fetch(group, topic, True))
        t.add(f"{outcome}: pending, not require_stable", await wire.offset_fetch(group, topic, False))
        t.add(f"{outcome}: end", await producer.end(outcome == "committed"))
        await wire.wait_until_stable(group, topic)
        t.add(f"{outcome}: ended, require_stable", await wire.offset_fetch(group, topic, True))
    # A TxnOffsetCommit delayed past both ends, sent at the first transaction's epoch (KIP-890's late write).
    t.add("late txn offset commit", await producer.txn_offset_commit(group, topic, 11, epoch=first_epoch))
    await wire.wait_until_stable(group, topic)
    t.add("after the late commit, require_stable", await wire.offset_fetch(group, topic, True))


def _committed(answer):
    partition = answer["groups"][0]["topics"][0]["partitions"][0]
    return partition["committed_offset"], partition["error_code"]


async def test_d_offset_fetch_require_stable_with_a_pending_transactional_offset(
        broker_at_level, kafka_at_level, client_transaction_version):
    def facts(steps):
        assert _committed(steps["committed: pending, require_stable"]) == (-1, Errors.UNSTABLE_OFFSET_COMMIT)
        assert _committed(steps["committed: pending, not require_stable"]) == (-1, Errors.NONE)
        assert _committed(steps["committed: ended, require_stable"]) == (3, Errors.NONE)
        assert _committed(steps["aborted: pending, require_stable"]) == (-1, Errors.UNSTABLE_OFFSET_COMMIT)
        assert _committed(steps["aborted: pending, not require_stable"]) == (3, Errors.NONE)
        assert _committed(steps["aborted: ended, require_stable"]) == (3, Errors.NONE)
        assert codes(steps["aborted: end"]) == [Errors.NONE]
        # At version 1 the epoch is still the producer's, but the group is in no transaction; at 2
        # the epoch is two ends old and fenced. Either way the committed offset stays 3.
        late = Errors.INVALID_TXN_STATE if client_transaction_version == 1 else Errors.INVALID_PRODUCER_EPOCH
        assert codes(steps["late txn offset commit"]) == [late]
        assert _committed(steps["after the late commit, require_stable"]) == (3, Errors.NONE)
        if client_transaction_version == 2:  # each end bumps; the second transaction ran at the bumped epoch
            epoch = steps["init"]["producer_epoch"]
            assert [steps[f"{outcome}: end"]["producer_epoch"] for outcome in ("committed", "aborted")] == [
                epoch + 1, epoch + 2]
    await differential(broker_at_level, kafka_at_level, require_stable_with_a_pending_transactional_offset, facts=facts,
                       client_transaction_version=client_transaction_version)


async def plain_commit_during_a_pending_transactional_offset(wire, t):
    topic, group = wire.named("overtaken"), wire.named("overtaken-group")
    await wire.create_topic(topic)
    await wire.find_coordinator(group, "group")
    for outcome, txn_offset, plain_offset in (("commit", 10, 20), ("abort", 30, 40)):
        producer = TransactionalProducer(wire, wire.named(f"overtaken-{outcome}"))
        await wire.find_coordinator(producer.txn_id, "transaction")
        await producer.init()
        t.add(f"{outcome}: add offsets", await producer.add_offsets(group))
        t.add(f"{outcome}: txn offset commit", await producer.txn_offset_commit(group, topic, txn_offset))
        t.add(f"{outcome}: plain offset commit", await wire.offset_commit(group, topic, plain_offset))
        t.add(f"{outcome}: pending", await wire.offset_fetch(group, topic, False))
        t.add(f"{outcome}: end", await producer.end(outcome == "commit"))
        await wire.wait_until_stable(group, topic)
        t.add(f"{outcome}: ended", await wire.offset_fetch(group, topic, True))


async def test_a_plain_commit_after_a_pending_transactional_offset_stays(
        broker_at_level, kafka_at_level, client_transaction_version):
    def facts(steps):
        # The transactional offset was written first; its commit does not overwrite the newer one.
        assert _committed(steps["commit: pending"]) == (20, Errors.NONE)
        assert _committed(steps["commit: ended"]) == (20, Errors.NONE)
        assert _committed(steps["abort: ended"]) == (40, Errors.NONE)
    await differential(broker_at_level, kafka_at_level, plain_commit_during_a_pending_transactional_offset, facts=facts,
                       client_transaction_version=client_transaction_version)


_EMPTY_GROUP = ("Weir refuses the empty group id wherever it names a group (broker/group/offsets.py "
                "validate_group_id); Kafka accepts it in AddOffsetsToTxn, OffsetCommit and OffsetFetch "
                "(standalone consumers of old used it) and refuses it only in TxnOffsetCommit. Left to the "
                "group coordinator's owner: accepting it touches every offsets path.")
_AFTER_EMPTY_GROUP = "follows from the refused AddOffsetsToTxn: Weir's transaction never started"


def empty_group_deviations(client_transaction_version: int) -> dict:
    topic = "nameless" if client_transaction_version == 1 else f"nameless-tv{client_transaction_version}"
    deviations = {
        "offset commit.topics[0].partitions[0].error_code": Deviation(Errors.NONE, Errors.INVALID_GROUP_ID,
                                                                      _EMPTY_GROUP),
        "offset fetch.groups[0].error_code": Deviation(Errors.NONE, Errors.INVALID_GROUP_ID, _EMPTY_GROUP),
        "offset fetch.groups[0].topics": Deviation(
            [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 4,
                                             "committed_leader_epoch": -1, "metadata": "plain",
                                             "error_code": Errors.NONE}]}], [], _EMPTY_GROUP),
    }
    if client_transaction_version == 1:  # at version 2 there is no AddOffsetsToTxn to refuse
        deviations["add offsets.error_code"] = Deviation(Errors.NONE, Errors.INVALID_GROUP_ID, _EMPTY_GROUP)
        deviations["abort.error_code"] = Deviation(Errors.NONE, Errors.INVALID_TXN_STATE, _AFTER_EMPTY_GROUP)
    return deviations


async def the_empty_group_id(wire, t):
    topic, txn = wire.named("nameless"), wire.named("nameless-txn")
    await wire.create_topic(topic)
    await wire.find_coordinator(txn, "transaction")
    t.add("find coordinator", await wire.find_coordinator("", "group"))
    producer = TransactionalProducer(wire, txn)
    await producer.init()
    t.add("add offsets", await producer.add_offsets(""))
    t.add("txn offset commit", await producer.txn_offset_commit("", topic, 3))
    t.add("offset commit", await wire.offset_commit("", topic, 4))
    t.add("offset fetch", await wire.offset_fetch("", topic, False))
    t.add("abort", await producer.end(False))


async def test_the_empty_group_id(
        broker_at_level, kafka_at_level, client_transaction_version):
    def facts(steps):
        if client_transaction_version == 1:
            assert codes(steps["add offsets"]) == [Errors.NONE]
        else:  # nothing was added, so the abort is an empty one, allowed at version 2
            assert codes(steps["abort"]) == [Errors.NONE]
        assert codes(steps["txn offset commit"]) == [Errors.INVALID_GROUP_ID]
        assert _committed(steps["offset fetch"]) == (4, Errors.NONE)
    await differential(broker_at_level, kafka_at_level, the_empty_group_id, facts=facts,
                       deviations=empty_group_deviations(client_transaction_version),
                       client_transaction_version=client_transaction_version)
