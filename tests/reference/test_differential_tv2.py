"""Transaction version 2 (KIP-890 part 2) on Weir and on Apache Kafka 4.4.0 (which finalizes it by
default), request by request as a Kafka 4 Java producer sends them: Produce v12 and TxnOffsetCommit
v5 with no AddPartitionsToTxn / AddOffsetsToTxn, EndTxn v5 answering the bumped epoch, its retry, an
empty abort, the KIP-890 late write, and the TRANSACTION_ABORTABLE of Produce v11."""

from weir.protocol.errors import Errors
from tests.reference.differential import codes, differential, log_of

TOPIC, TXN, GROUP, LATE = "tv2", "tv2-txn", "tv2-group", "tv2-late"
V11, V12, V_TXN_OFFSET_COMMIT_TV2, V_END_TXN_TV2, V_INIT_PRODUCER_ID = 11, 12, 5, 5, 5
#: A Produce v12 may meet the end of the previous transaction still writing its markers; Kafka
#: then answers CONCURRENT_TRANSACTIONS (after its own retries) and the producer retries.
AFTER_AN_END = frozenset({Errors.CONCURRENT_TRANSACTIONS})


async def tv2_transactions(wire, t):
    await wire.create_topic(TOPIC)
    await wire.find_coordinator(TXN, "transaction")
    await wire.find_coordinator(LATE, "transaction")
    await wire.find_coordinator(GROUP, "group")
    answer = t.add("init", await wire.init_producer_id(TXN, version=V_INIT_PRODUCER_ID))
    pid, epoch = answer.producer_id, answer.producer_epoch

    def produce(value, producer_epoch, seq, txn_id=TXN, version=V12, producer=None):
        return wire.produce(TOPIC, [value], pid=pid if producer is None else producer, epoch=producer_epoch,
                            seq=seq, txn_id=txn_id, version=version, retry=AFTER_AN_END)

    t.add("produce v11, partition not added", await produce(b"refused", epoch, 0, version=V11))
    t.add("produce v12, implicitly added", await produce(b"committed", epoch, 0))
    t.add("txn offset commit v5, implicitly added", await wire.txn_offset_commit(
        TXN, GROUP, pid, epoch, TOPIC, 1, version=V_TXN_OFFSET_COMMIT_TV2))
    t.add("commit", await wire.end_txn(TXN, pid, epoch, True, version=V_END_TXN_TV2))
    t.add("commit, retried", await wire.end_txn(TXN, pid, epoch, True, version=V_END_TXN_TV2))
    t.add("abort, at the epoch before", await wire.end_txn(TXN, pid, epoch, False, version=V_END_TXN_TV2))
    await wire.wait_until_stable(GROUP, TOPIC)
    await wire.wait_for_lso(TOPIC, 2)  # both markers written: the commit is complete, not still preparing
    t.add("offset fetch after the commit", await wire.offset_fetch(GROUP, TOPIC, require_stable=True))
    t.add("empty abort", await wire.end_txn(TXN, pid, epoch + 1, False, version=V_END_TXN_TV2))
    t.add("commit with nothing open", await wire.end_txn(TXN, pid, epoch + 2, True, version=V_END_TXN_TV2))

    late = t.add("init, late", await wire.init_producer_id(LATE, version=V_INIT_PRODUCER_ID))
    late_pid, late_epoch = late.producer_id, late.producer_epoch
    t.add("produce, transaction 1", await produce(b"txn 1", late_epoch, 0, LATE, producer=late_pid))
    t.add("commit transaction 1", await wire.end_txn(LATE, late_pid, late_epoch, True, version=V_END_TXN_TV2))
    t.add("produce, transaction 2", await produce(b"txn 2", late_epoch + 1, 0, LATE, producer=late_pid))
    t.add("produce, transaction 1's late write", await produce(b"txn 1, delayed", late_epoch, 1, LATE,
                                                                 producer=late_pid))
    t.add("abort transaction 2", await wire.end_txn(LATE, late_pid, late_epoch + 1, False,
                                                    version=V_END_TXN_TV2))
    await wire.wait_for_lso(TOPIC, 6)
    t.add("fetch", await wire.fetch(TOPIC, isolation=0))


async def test_tv2_transactions(any_broker, kafka_broker):
    def facts(steps):
        init = steps["init"]
        epoch = init["producer_epoch"]
        expected = {
            "produce v11, partition not added": Errors.TRANSACTION_ABORTABLE,
            "produce v12, implicitly added": Errors.NONE,
            "txn offset commit v5, implicitly added": Errors.NONE,
            "commit": Errors.NONE,
            "commit, retried": Errors.NONE,
            "abort, at the epoch before": Errors.INVALID_TXN_STATE,
            "empty abort": Errors.NONE,
            "commit with nothing open": Errors.INVALID_TXN_STATE,
            "produce, transaction 1": Errors.NONE,
            "produce, transaction 2": Errors.NONE,
            "produce, transaction 1's late write": Errors.INVALID_PRODUCER_EPOCH,
            "abort transaction 2": Errors.NONE,
        }
        assert {step: codes(steps[step]) for step in expected} == {step: [code] for step, code in expected.items()}
        assert (steps["commit"]["producer_id"], steps["commit"]["producer_epoch"]) == (init["producer_id"], epoch + 1)
        assert steps["commit, retried"]["producer_epoch"] == epoch + 1
        assert steps["empty abort"]["producer_epoch"] == epoch + 2
        assert steps["offset fetch after the commit"]["groups"][0]["topics"][0]["partitions"][0][
            "committed_offset"] == 1
        # Transaction 1's late write is nowhere: the log holds the two transactions and their markers.
        expected = [b"committed", "COMMIT", b"txn 1", "COMMIT", b"txn 2", "ABORT"]
        assert log_of(steps["fetch"]) == expected, log_of(steps["fetch"])
    await differential(any_broker, kafka_broker, tv2_transactions, facts=facts)
