"""What a broker answers a transactional write it cannot verify (KIP-890 part 1), on Weir
and on Apache Kafka: Produce and TxnOffsetCommit from unknown, foreign or stale producers."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import produce
from weir.protocol.records import Record, encode_batch
from tests.reference.differential import Deviation, codes, differential, log_of
from tests.reference.producer import TransactionalProducer

TOPIC, TXN, GROUP = "verified", "verified-txn", "verified-group"

_NO_PRODUCER = ("Kafka appends a transactional batch without a producer id untracked (no producer state, "
                "no verification); Weir refuses it with INVALID_TXN_STATE, since no marker could ever "
                "close it. No client sends one.")
_STEP = "produce, transactional without a producer id.responses[0].partition_responses[0]"
_NO_PRODUCER_V12 = ("as above; a Produce v12 asks the coordinator to add the partition for producer id -1, "
                    "which no transactional id maps to: INVALID_PRODUCER_ID_MAPPING, and, as for every "
                    "refused verification, no log start offset")
KNOWN_DEVIATIONS = {
    1: {f"{_STEP}.error_code": Deviation(Errors.NONE, Errors.INVALID_TXN_STATE, _NO_PRODUCER),
        f"{_STEP}.base_offset": Deviation(2, -1, _NO_PRODUCER)},
    2: {f"{_STEP}.error_code": Deviation(Errors.NONE, Errors.INVALID_PRODUCER_ID_MAPPING, _NO_PRODUCER_V12),
        f"{_STEP}.base_offset": Deviation(2, -1, _NO_PRODUCER_V12),
        f"{_STEP}.log_start_offset": Deviation(0, -1, _NO_PRODUCER_V12)},
}


async def unverifiable_transactional_writes(wire, t):
    topic, txn, group = wire.named(TOPIC), wire.named(TXN), wire.named(GROUP)
    tv2 = wire.client_transaction_version == 2
    await wire.create_topic(topic)
    await wire.find_coordinator(txn, "transaction")
    await wire.find_coordinator(group, "group")
    producer = TransactionalProducer(wire, txn)
    answer = t.add("init", await producer.init())
    pid, epoch = answer.producer_id, answer.producer_epoch

    async def write(step, seq=0, **batch):
        t.add(step, await producer.produce(topic, [b"unverified"], seq, **batch))

    await write("produce, unknown transactional id", txn_id=wire.named("nobody"))
    await write("produce, another producer id", pid=pid + 5)
    await write("produce, newer epoch", epoch=epoch + 1)
    if not tv2:  # at version 2 a Produce v12 adds its partition (Produce v11's refusal: test_differential_tv2)
        await write("produce, partition not added")
    batch = encode_batch([Record(b"no id")], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                         transactional=True)
    t.add("produce, no transactional id", await wire.connection.request(
        ApiKey.PRODUCE, producer.produce_version, produce.REQUEST(
            transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
                name=topic, partition_data=[produce.PartitionData(index=0, records=batch)])])))
    t.add("add offsets", await producer.add_offsets(group))
    for step, txn_id, producer_id, producer_epoch, group_id in (
            ("txn offset commit, newer epoch", txn, pid, epoch + 1, group),
            ("txn offset commit, older epoch", txn, pid, epoch - 1, group),
            ("txn offset commit, another producer id", txn, pid + 5, epoch, group),
            ("txn offset commit, unknown transactional id", wire.named("nobody"), pid, epoch, group),
            # At version 2 a TxnOffsetCommit v5 adds its group: nothing to refuse.
            *([] if tv2 else [("txn offset commit, group not added", txn, pid, epoch, wire.named("another-group"))])):
        t.add(step, await producer.txn_offset_commit(group_id, topic, 5, pid=producer_id, epoch=producer_epoch,
                                                     txn_id=txn_id))
    t.add("add partition", await producer.add_partitions(topic))
    await write("produce, in the transaction")
    await write("produce, newer epoch once the transaction is open", 1, epoch=epoch + 1)
    t.add("abort", await producer.end(False, epoch=epoch))
    await wire.wait_for_lso(topic, 2)
    t.add("fetch", await wire.fetch(topic, isolation=0))
    await write("produce, transactional without a producer id", -1, pid=-1, epoch=-1)


async def test_unverifiable_transactional_writes(broker_at_level, kafka_at_level, client_transaction_version):
    def facts(steps):
        # Weir answered INVALID_TXN_STATE to all but the older epoch until
        # broker/txn/coordinator.py verify_partition and broker/handlers/produce.py answered
        # as Kafka does.
        expected = {
            "produce, unknown transactional id": Errors.INVALID_PRODUCER_ID_MAPPING,
            "produce, another producer id": Errors.INVALID_PRODUCER_ID_MAPPING,
            "produce, newer epoch": Errors.INVALID_PRODUCER_EPOCH,
            **({"produce, partition not added": Errors.INVALID_TXN_STATE,
                "txn offset commit, group not added": Errors.INVALID_TXN_STATE}
               if client_transaction_version == 1 else {}),
            "produce, no transactional id": Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "txn offset commit, newer epoch": Errors.INVALID_PRODUCER_EPOCH,
            "txn offset commit, older epoch": Errors.INVALID_PRODUCER_EPOCH,
            "txn offset commit, another producer id": Errors.INVALID_PRODUCER_ID_MAPPING,
            "txn offset commit, unknown transactional id": Errors.INVALID_PRODUCER_ID_MAPPING,
            "produce, in the transaction": Errors.NONE,
            # Verified again, not judged by sequence: an open transaction at another epoch
            # does not vouch for this batch (Weir answered OUT_OF_ORDER_SEQUENCE_NUMBER until
            # broker/log/producer_state.py has_open_txn compared epochs).
            "produce, newer epoch once the transaction is open": Errors.INVALID_PRODUCER_EPOCH,
        }
        assert {step: codes(steps[step]) for step in expected} == {step: [code] for step, code in expected.items()}
        assert log_of(steps["fetch"]) == [b"unverified", "ABORT"]
    await differential(broker_at_level, kafka_at_level, unverifiable_transactional_writes, facts=facts,
                       deviations=KNOWN_DEVIATIONS[client_transaction_version],
                       client_transaction_version=client_transaction_version)
