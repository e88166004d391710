"""Fencing and EndTxn's error cases, on Weir and on Apache Kafka."""

from weir.protocol.errors import Errors
from tests.reference.differential import codes, differential, log_of

TOPIC = "fencing"


async def old_epoch_after_reinit(wire, t):
    t.add("find coordinator", await wire.find_coordinator("fenced", "transaction"))
    await wire.create_topic(TOPIC)
    first = t.add("init", await wire.init_producer_id("fenced"))
    pid, old = first.producer_id, first.producer_epoch
    t.add("add partition", await wire.add_partitions("fenced", pid, old, TOPIC))
    t.add("produce in the open transaction", await wire.produce(TOPIC, [b"a"], pid=pid, epoch=old, seq=0,
                                                                txn_id="fenced"))
    second = t.add("re-init aborts it and bumps the epoch", await wire.init_producer_id("fenced"))
    new = second.producer_epoch
    t.add("produce with the old epoch", await wire.produce(TOPIC, [b"zombie"], pid=pid, epoch=old, seq=1,
                                                           txn_id="fenced"))
    t.add("add partition with the old epoch", await wire.add_partitions("fenced", pid, old, TOPIC))
    t.add("end with the old epoch", await wire.end_txn("fenced", pid, old, True))
    t.add("add partition with the new epoch", await wire.add_partitions("fenced", second.producer_id, new, TOPIC))
    t.add("produce with the new epoch", await wire.produce(TOPIC, [b"b"], pid=second.producer_id, epoch=new,
                                                           seq=0, txn_id="fenced"))
    t.add("commit with the new epoch", await wire.end_txn("fenced", second.producer_id, new, True))
    await wire.wait_for_lso(TOPIC, 4)  # a, its abort marker, b, its commit marker
    for step, seq in (("produce after the commit, next sequence", 1), ("produce after the commit, a gap", 5)):
        t.add(step, await wire.produce(TOPIC, [b"late"], pid=second.producer_id, epoch=new, seq=seq,
                                       txn_id="fenced"))
    t.add("read_committed fetch", await wire.fetch(TOPIC, isolation=1))
    t.add("read_uncommitted fetch", await wire.fetch(TOPIC, isolation=0))


def _produced(answer):
    partition = answer["responses"][0]["partition_responses"][0]
    return partition["error_code"], partition["log_start_offset"]


async def test_a_produce_with_the_old_epoch_after_a_reinit_is_fenced(broker_at_level, kafka_at_level):
    def facts(steps):
        assert steps["re-init aborts it and bumps the epoch"]["producer_epoch"] == 2  # abort marker took 1
        assert _produced(steps["produce with the old epoch"]) == (Errors.INVALID_PRODUCER_EPOCH, -1)
        assert codes(steps["add partition with the old epoch"]) == [Errors.PRODUCER_FENCED]
        assert codes(steps["end with the old epoch"]) == [Errors.PRODUCER_FENCED]
        assert codes(steps["commit with the new epoch"]) == [Errors.NONE]
        # Kafka asks the coordinator before its log checks epoch and sequence, and a failed
        # verification carries no log start offset. Weir checked the sequence first
        # (OUT_OF_ORDER_SEQUENCE_NUMBER, log start 0) until broker/log/partition.py verified first.
        assert _produced(steps["produce after the commit, next sequence"]) == (Errors.INVALID_TXN_STATE, -1)
        assert _produced(steps["produce after the commit, a gap"]) == (Errors.INVALID_TXN_STATE, -1)
        committed = steps["read_committed fetch"]["responses"][0]["partitions"][0]
        assert log_of(steps["read_committed fetch"]) == [b"a", "ABORT", b"b", "COMMIT"]
        assert [t["producer_id"] for t in committed["aborted_transactions"]] == ["producer_id#0"]
    await differential(broker_at_level, kafka_at_level, old_epoch_after_reinit, facts=facts)


async def end_txn_in_every_wrong_state(wire, t):
    await wire.find_coordinator("ender", "transaction")
    await wire.create_topic("ender")
    t.add("init", await wire.init_producer_id("ender"))
    answer = t.add("init again", await wire.init_producer_id("ender"))
    pid, epoch = answer.producer_id, answer.producer_epoch
    t.add("commit with no transaction", await wire.end_txn("ender", pid, epoch, True))
    t.add("abort with no transaction", await wire.end_txn("ender", pid, epoch, False))
    t.add("add partition", await wire.add_partitions("ender", pid, epoch, "ender"))
    t.add("commit with an older epoch", await wire.end_txn("ender", pid, epoch - 1, True))
    t.add("commit with a newer epoch", await wire.end_txn("ender", pid, epoch + 1, True))
    t.add("commit with an older epoch, v0", await wire.end_txn("ender", pid, epoch - 1, True, version=0))
    t.add("commit with another producer id", await wire.end_txn("ender", pid + 1, epoch, True))
    t.add("commit an unknown transactional id", await wire.end_txn("nobody", pid, epoch, True))
    t.add("commit", await wire.end_txn("ender", pid, epoch, True))
    t.add("commit retried", await wire.end_txn("ender", pid, epoch, True))
    t.add("abort after commit", await wire.end_txn("ender", pid, epoch, False))
    t.add("add partition again", await wire.add_partitions("ender", pid, epoch, "ender"))
    t.add("abort", await wire.end_txn("ender", pid, epoch, False))
    t.add("abort retried", await wire.end_txn("ender", pid, epoch, False))
    t.add("commit after abort", await wire.end_txn("ender", pid, epoch, True))
    await wire.wait_for_lso("ender", 2)  # the commit and the abort marker
    t.add("read_uncommitted fetch", await wire.fetch("ender", isolation=0))


async def test_b_end_txn_in_every_wrong_state(broker_at_level, kafka_at_level):
    def facts(steps):
        expected = {
            "commit with no transaction": Errors.INVALID_TXN_STATE,
            "abort with no transaction": Errors.INVALID_TXN_STATE,
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
        assert log_of(steps["read_uncommitted fetch"]) == ["COMMIT", "ABORT"]  # one marker each, no data
    await differential(broker_at_level, kafka_at_level, end_txn_in_every_wrong_state, facts=facts)
