"""WriteTxnMarkers (what an operator's abort of a hanging transaction sends) where there is
no transaction to end, on Weir and on Apache Kafka."""

from weir.protocol.errors import Errors
from tests.reference.differential import codes, differential, log_of
from tests.reference.producer import TransactionalProducer



async def markers_for_absent_transactions(wire, t):
    topic, txn = wire.named("markers"), wire.named("marked")
    # Producer ids no producer has, different per client version since one broker serves both runs.
    never, never_too = (4242, 4243) if wire.client_transaction_version == 1 else (5242, 5243)
    await wire.create_topic(topic)
    t.add("plain produce", await wire.produce(topic, [b"plain"]))
    t.add("abort marker, producer never seen", await wire.write_txn_markers(never, 0, False, topic))
    t.add("commit marker, producer never seen", await wire.write_txn_markers(never_too, 3, True, topic))
    answer = t.add("init idempotent", await wire.init_producer_id(None))
    t.add("idempotent produce", await wire.produce(topic, [b"idem"], pid=answer.producer_id,
                                                   epoch=answer.producer_epoch, seq=0))
    t.add("commit marker, idempotent producer", await wire.write_txn_markers(
        answer.producer_id, answer.producer_epoch, True, topic))
    t.add("abort marker, unknown topic", await wire.write_txn_markers(never, 0, False, wire.named("no-such-topic")))
    t.add("abort marker, unknown partition", await wire.write_txn_markers(never, 0, False, topic, partitions=(5,)))
    await wire.find_coordinator(txn, "transaction")
    producer = TransactionalProducer(wire, txn)
    await producer.init()
    answer = t.add("init transactional", await producer.init())
    pid, epoch = answer.producer_id, answer.producer_epoch
    t.add("add partition", await producer.add_partitions(topic))
    t.add("transactional produce", await producer.produce(topic, [b"txn"], 0))
    t.add("abort marker, older epoch", await wire.write_txn_markers(pid, epoch - 1, False, topic))
    t.add("abort marker", await wire.write_txn_markers(pid, epoch, False, topic))
    t.add("abort marker again: transaction now absent", await wire.write_txn_markers(pid, epoch, False, topic))
    t.add("latest, read_uncommitted", await wire.list_offsets(topic, 0))
    t.add("latest, read_committed", await wire.list_offsets(topic, 1))
    t.add("read_committed fetch", await wire.fetch(topic, isolation=1))


async def test_f_write_txn_markers_for_an_absent_transaction(broker_at_level, kafka_at_level,
                                                            client_transaction_version):
    def facts(steps):
        assert codes(steps["abort marker, producer never seen"]) == [Errors.NONE]
        assert codes(steps["abort marker, unknown topic"]) == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
        assert codes(steps["abort marker"]) == [Errors.NONE]
        assert log_of(steps["read_committed fetch"])[0] == b"plain"
    await differential(broker_at_level, kafka_at_level, markers_for_absent_transactions, facts=facts,
                       client_transaction_version=client_transaction_version)
