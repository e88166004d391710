"""Fencing and EndTxn's error cases, on Weir and on Apache Kafka."""

from weir.protocol.errors import Errors
from tests.reference.differential import codes, differential, log_of
from tests.reference.producer import TransactionalProducer



async def old_epoch_after_reinit(wire, t):
    topic, txn = wire.named("fencing"), wire.named("fenced")
    t.add("find coordinator", await wire.find_coordinator(txn, "transaction"))
    await wire.create_topic(topic)
    producer = TransactionalProducer(wire, txn)
    first = t.add("init", await producer.init())
    pid, old = first.producer_id, first.producer_epoch
    t.add("add partition", await producer.add_partitions(topic))
    t.add("produce in the open transaction", await producer.produce(topic, [b"a"], 0))
    second = t.add("re-init aborts it and bumps the epoch", await producer.init())
    new = second.producer_epoch
    t.add("produce with the old epoch", await producer.produce(topic, [b"zombie"], 1, pid=pid, epoch=old))
    t.add("add partition with the old epoch", await producer.add_partitions(topic, pid=pid, epoch=old))
    t.add("end with the old epoch", await producer.end(True, pid=pid, epoch=old))
    t.add("add partition with the new epoch", await producer.add_partitions(topic))
    t.add("produce with the new epoch", await producer.produce(topic, [b"b"], 0))
    t.add("commit with the new epoch", await producer.end(True, epoch=new))
    await wire.wait_for_lso(topic, 4)  # a, its abort marker, b, its commit marker
    # At the epoch the commit was sent with: at version 2 the commit bumped it past.
    for step, seq in (("produce after the commit, next sequence", 1), ("produce after the commit, a gap", 5)):
        t.add(step, await producer.produce(topic, [b"late"], seq, pid=second.producer_id, epoch=new))
    t.add("read_committed fetch", await wire.fetch(topic, isolation=1))
    t.add("read_uncommitted fetch", await wire.fetch(topic, isolation=0))


def _produced(answer):
    partition = answer["responses"][0]["partition_responses"][0]
    return partition["error_code"], partition["log_start_offset"]


async def test_a_produce_with_the_old_epoch_after_a_reinit_is_fenced(broker_at_level, kafka_at_level,
                                                                    client_transaction_version):
    def facts(steps):
        assert steps["re-init aborts it and bumps the epoch"]["producer_epoch"] == 2  # abort marker took 1
        assert _produced(steps["produce with the old epoch"]) == (Errors.INVALID_PRODUCER_EPOCH, -1)
        assert codes(steps["end with the old epoch"]) == [Errors.PRODUCER_FENCED]
        assert codes(steps["commit with the new epoch"]) == [Errors.NONE]
        if client_transaction_version == 1:
            assert codes(steps["add partition with the old epoch"]) == [Errors.PRODUCER_FENCED]
            # Kafka asks the coordinator before its log checks epoch and sequence, and a failed
            # verification carries no log start offset. Weir checked the sequence first
            # (OUT_OF_ORDER_SEQUENCE_NUMBER, log start 0) until broker/log/partition.py verified first.
            after_the_commit = (Errors.INVALID_TXN_STATE, -1)
        else:
            # At version 2 there is no AddPartitionsToTxn to fence; the commit answers the epoch
            # the producer goes on with, and its marker fences the epoch the commit was sent at.
            assert steps["commit with the new epoch"]["producer_epoch"] == 3
            after_the_commit = (Errors.INVALID_PRODUCER_EPOCH, -1)
        assert _produced(steps["produce after the commit, next sequence"]) == after_the_commit
        assert _produced(steps["produce after the commit, a gap"]) == after_the_commit
        committed = steps["read_committed fetch"]["responses"][0]["partitions"][0]
        assert log_of(steps["read_committed fetch"]) == [b"a", "ABORT", b"b", "COMMIT"]
        assert [t["producer_id"] for t in committed["aborted_transactions"]] == ["producer_id#0"]
    await differential(broker_at_level, kafka_at_level, old_epoch_after_reinit, facts=facts,
                       client_transaction_version=client_transaction_version)


async def end_txn_in_every_wrong_state(wire, t):
    topic, txn = wire.named("ender"), wire.named("ender")
    await wire.find_coordinator(txn, "transaction")
    await wire.create_topic(topic)
    producer = TransactionalProducer(wire, txn)
    t.add("init", await producer.init())
    answer = t.add("init again", await producer.init())
    pid, epoch = answer.producer_id, answer.producer_epoch
    t.add("commit with no transaction", await producer.end(True))
    t.add("abort with no transaction", await producer.end(False))  # at version 2 an empty abort: bumps
    epoch = producer.epoch
    # At version 1 AddPartitionsToTxn opens the transaction; at version 2 nothing but a write
    # does, so the producer writes one record (the log below differs by it).
    t.add("add partition", await producer.add_partitions(topic))
    if wire.client_transaction_version == 2:
        t.add("produce", await producer.produce(topic, [b"opens"], 0))
    t.add("commit with an older epoch", await producer.end(True, epoch=epoch - 1))
    t.add("commit with a newer epoch", await producer.end(True, epoch=epoch + 1))
    t.add("commit with an older epoch, v0", await producer.end(True, epoch=epoch - 1, version=0))
    t.add("commit with another producer id", await producer.end(True, pid=pid + 1))
    t.add("commit an unknown transactional id", await producer.end(True, txn_id=wire.named("nobody")))
    t.add("commit", await producer.end(True, epoch=epoch))
    t.add("commit retried", await producer.end(True, epoch=epoch))
    t.add("abort after commit", await producer.end(False, epoch=epoch))
    epoch = producer.epoch  # at version 2 the commit's bumped epoch
    t.add("add partition again", await producer.add_partitions(topic))
    if wire.client_transaction_version == 2:
        t.add("produce again", await producer.produce(topic, [b"opens again"], 0))
    t.add("abort", await producer.end(False, epoch=epoch))
    t.add("abort retried", await producer.end(False, epoch=epoch))
    t.add("commit after abort", await producer.end(True, epoch=epoch))
    await wire.wait_for_lso(topic, 2 if wire.client_transaction_version == 1 else 4)  # the two markers
    t.add("read_uncommitted fetch", await wire.fetch(topic, isolation=0))


async def test_b_end_txn_in_every_wrong_state(broker_at_level, kafka_at_level, client_transaction_version):
    def facts(steps):
        expected = {
            "commit with no transaction": Errors.INVALID_TXN_STATE,
            # At version 2 an abort with nothing open is allowed (an empty abort bumps the epoch).
            "abort with no transaction": Errors.INVALID_TXN_STATE if client_transaction_version == 1 else Errors.NONE,
            "commit with an older epoch": Errors.PRODUCER_FENCED,
            "commit with a newer epoch": Errors.PRODUCER_FENCED,
            "commit with an older epoch, v0": Errors.INVALID_PRODUCER_EPOCH,
            "commit with another producer id": Errors.INVALID_PRODUCER_ID_MAPPING,
            "commit an unknown transactional id": Errors.INVALID_PRODUCER_ID_MAPPING,
            "commit": Errors.NONE,
            "commit retried": Errors.NONE,
            "abort after commit": Errors.INVALID_TXN_STATE,
            "abort": Errors.NONE,
            "abort retried": Errors.NONE,
            "commit after abort": Errors.INVALID_TXN_STATE,
        }
        assert {step: codes(steps[step]) for step in expected} == {step: [code] for step, code in expected.items()}
        if client_transaction_version == 1:
            assert log_of(steps["read_uncommitted fetch"]) == ["COMMIT", "ABORT"]  # one marker each, no data
        else:
            assert steps["abort with no transaction"]["producer_epoch"] == steps["init again"]["producer_epoch"] + 1
            assert steps["commit"]["producer_epoch"] == steps["abort with no transaction"]["producer_epoch"] + 1
            assert steps["abort"]["producer_epoch"] == steps["commit"]["producer_epoch"] + 1
            assert log_of(steps["read_uncommitted fetch"]) == [b"opens", "COMMIT", b"opens again", "ABORT"]
    await differential(broker_at_level, kafka_at_level, end_txn_in_every_wrong_state, facts=facts,
                       client_transaction_version=client_transaction_version)
