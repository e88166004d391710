"""WriteTxnMarkers (what an operator's abort of a hanging transaction sends) where there is
no transaction to end, on Weir and on Apache Kafka."""

from weir.protocol.errors import Errors
from tests.reference.differential import codes, differential, log_of

TOPIC = "markers"


async def markers_for_absent_transactions(wire, t):
    await wire.create_topic(TOPIC)
    t.add("plain produce", await wire.produce(TOPIC, [b"plain"]))
    t.add("abort marker, producer never seen", await wire.write_txn_markers(4242, 0, False, TOPIC))
    t.add("commit marker, producer never seen", await wire.write_txn_markers(4243, 3, True, TOPIC))
    answer = t.add("init idempotent", await wire.init_producer_id(None))
    t.add("idempotent produce", await wire.produce(TOPIC, [b"idem"], pid=answer.producer_id,
                                                   epoch=answer.producer_epoch, seq=0))
    t.add("commit marker, idempotent producer", await wire.write_txn_markers(
        answer.producer_id, answer.producer_epoch, True, TOPIC))
    t.add("abort marker, unknown topic", await wire.write_txn_markers(4242, 0, False, "no-such-topic"))
    t.add("abort marker, unknown partition", await wire.write_txn_markers(4242, 0, False, TOPIC, partitions=(5,)))
    await wire.find_coordinator("marked", "transaction")
    await wire.init_producer_id("marked")
    answer = t.add("init transactional", await wire.init_producer_id("marked"))
    pid, epoch = answer.producer_id, answer.producer_epoch
    t.add("add partition", await wire.add_partitions("marked", pid, epoch, TOPIC))
    t.add("transactional produce", await wire.produce(TOPIC, [b"txn"], pid=pid, epoch=epoch, seq=0,
                                                      txn_id="marked"))
    t.add("abort marker, older epoch", await wire.write_txn_markers(pid, epoch - 1, False, TOPIC))
    t.add("abort marker", await wire.write_txn_markers(pid, epoch, False, TOPIC))
    t.add("abort marker again: transaction now absent", await wire.write_txn_markers(pid, epoch, False, TOPIC))
    t.add("latest, read_uncommitted", await wire.list_offsets(TOPIC, 0))
    t.add("latest, read_committed", await wire.list_offsets(TOPIC, 1))
    t.add("read_committed fetch", await wire.fetch(TOPIC, isolation=1))


async def test_f_write_txn_markers_for_an_absent_transaction(broker_at_level, kafka_at_level):
    def facts(steps):
        assert codes(steps["abort marker, producer never seen"]) == [Errors.NONE]
        assert codes(steps["abort marker, unknown topic"]) == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
        assert codes(steps["abort marker"]) == [Errors.NONE]
        assert log_of(steps["read_committed fetch"])[0] == b"plain"
    await differential(broker_at_level, kafka_at_level, markers_for_absent_transactions, facts=facts)
