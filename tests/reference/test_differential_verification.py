"""What a broker answers a transactional write it cannot verify (KIP-890 part 1), on Weir
and on Apache Kafka: Produce and TxnOffsetCommit from unknown, foreign or stale producers."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import produce
from weir.protocol.records import Record, encode_batch
from tests.reference.differential import Deviation, codes, differential, log_of
from tests.reference.wire import V_PRODUCE

TOPIC, TXN, GROUP = "verified", "verified-txn", "verified-group"

_NO_PRODUCER = ("Kafka appends a transactional batch without a producer id untracked (no producer state, "
                "no verification); Weir refuses it with INVALID_TXN_STATE, since no marker could ever "
                "close it. No client sends one.")
_STEP = "produce, transactional without a producer id.responses[0].partition_responses[0]"
KNOWN_DEVIATIONS = {
    f"{_STEP}.error_code": Deviation(Errors.NONE, Errors.INVALID_TXN_STATE, _NO_PRODUCER),
    f"{_STEP}.base_offset": Deviation(2, -1, _NO_PRODUCER),
}


async def unverifiable_transactional_writes(wire, t):
    await wire.create_topic(TOPIC)
    await wire.find_coordinator(TXN, "transaction")
    await wire.find_coordinator(GROUP, "group")
    answer = t.add("init", await wire.init_producer_id(TXN))
    pid, epoch = answer.producer_id, answer.producer_epoch

    async def write(step, **batch):
        t.add(step, await wire.produce(TOPIC, [b"unverified"], **{"pid": pid, "epoch": epoch, "seq": 0,
                                                                  "txn_id": TXN, **batch}))

    await write("produce, unknown transactional id", txn_id="nobody")
    await write("produce, another producer id", pid=pid + 5)
    await write("produce, newer epoch", epoch=epoch + 1)
    await write("produce, partition not added")
    batch = encode_batch([Record(b"no id")], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                         transactional=True)
    t.add("produce, no transactional id", await wire.connection.request(ApiKey.PRODUCE, V_PRODUCE, produce.REQUEST(
        transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
            name=TOPIC, partition_data=[produce.PartitionData(index=0, records=batch)])])))
    t.add("add offsets", await wire.add_offsets(TXN, pid, epoch, GROUP))
    for step, txn_id, producer, producer_epoch, group in (
            ("txn offset commit, newer epoch", TXN, pid, epoch + 1, GROUP),
            ("txn offset commit, older epoch", TXN, pid, epoch - 1, GROUP),
            ("txn offset commit, another producer id", TXN, pid + 5, epoch, GROUP),
            ("txn offset commit, unknown transactional id", "nobody", pid, epoch, GROUP),
            ("txn offset commit, group not added", TXN, pid, epoch, "another-group")):
        t.add(step, await wire.txn_offset_commit(txn_id, group, producer, producer_epoch, TOPIC, 5))
    t.add("add partition", await wire.add_partitions(TXN, pid, epoch, TOPIC))
    await write("produce, in the transaction")
    await write("produce, newer epoch once the transaction is open", epoch=epoch + 1, seq=1)
    t.add("abort", await wire.end_txn(TXN, pid, epoch, False))
    await wire.wait_for_lso(TOPIC, 2)
    t.add("fetch", await wire.fetch(TOPIC, isolation=0))
    await write("produce, transactional without a producer id", pid=-1, epoch=-1, seq=-1)


async def test_unverifiable_transactional_writes(broker_at_level, kafka_at_level):
    def facts(steps):
        # Weir answered INVALID_TXN_STATE to all but the older epoch until
        # broker/txn/coordinator.py verify_partition and broker/handlers/produce.py answered
        # as Kafka does.
        expected = {
            "produce, unknown transactional id": Errors.INVALID_PRODUCER_ID_MAPPING,
            "produce, another producer id": Errors.INVALID_PRODUCER_ID_MAPPING,
            "produce, newer epoch": Errors.INVALID_PRODUCER_EPOCH,
            "produce, partition not added": Errors.INVALID_TXN_STATE,
            "produce, no transactional id": Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "txn offset commit, newer epoch": Errors.INVALID_PRODUCER_EPOCH,
            "txn offset commit, older epoch": Errors.INVALID_PRODUCER_EPOCH,
            "txn offset commit, another producer id": Errors.INVALID_PRODUCER_ID_MAPPING,
            "txn offset commit, unknown transactional id": Errors.INVALID_PRODUCER_ID_MAPPING,
            "txn offset commit, group not added": Errors.INVALID_TXN_STATE,
            "produce, in the transaction": Errors.NONE,
            # Verified again, not judged by sequence: an open transaction at another epoch
            # does not vouch for this batch (Weir answered OUT_OF_ORDER_SEQUENCE_NUMBER until
            # broker/log/producer_state.py has_open_txn compared epochs).
            "produce, newer epoch once the transaction is open": Errors.INVALID_PRODUCER_EPOCH,
        }
        assert {step: codes(steps[step]) for step in expected} == {step: [code] for step, code in expected.items()}
        assert log_of(steps["fetch"]) == [b"unverified", "ABORT"]
    await differential(broker_at_level, kafka_at_level, unverifiable_transactional_writes, facts=facts,
                       deviations=KNOWN_DEVIATIONS)
