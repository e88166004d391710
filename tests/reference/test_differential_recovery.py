"""A producer whose transaction the coordinator aborted recovers by InitProducerId naming its
id and epoch (KIP-360), on Weir and on Apache Kafka, where the broker finalizes transaction
version 2; at version 1 the coordinator's fence leaves it fenced for good."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import init_producer_id
from tests.reference.differential import codes, differential, log_of
from tests.reference.wire import V_INIT_PRODUCER_ID


async def recovery_after_a_transaction_timeout(wire, t):
    topic, txn = "timed-out", "timed-out-txn"
    await wire.create_topic(topic)
    await wire.find_coordinator(txn, "transaction")
    answer = t.add("init, 1 s timeout", await wire.call(ApiKey.INIT_PRODUCER_ID, V_INIT_PRODUCER_ID,
                                                        init_producer_id.REQUEST(transactional_id=txn,
                                                                                 transaction_timeout_ms=1000)))
    pid, epoch = answer.producer_id, answer.producer_epoch
    t.add("add partition", await wire.add_partitions(txn, pid, epoch, topic))
    t.add("produce", await wire.produce(topic, [b"late"], pid=pid, epoch=epoch, seq=0, txn_id=txn))
    await wire.wait_for_lso(topic, 2)  # the coordinator's abort marker (cleanup runs every 500 ms)
    t.add("commit after the timeout", await wire.end_txn(txn, pid, epoch, True))
    t.add("produce after the timeout", await wire.produce(topic, [b"later"], pid=pid, epoch=epoch, seq=1,
                                                          txn_id=txn))
    t.add("init naming the timed-out epoch", await wire.init_producer_id(txn, producer_id=pid, producer_epoch=epoch))
    t.add("init naming it again: a retry", await wire.init_producer_id(txn, producer_id=pid, producer_epoch=epoch))
    t.add("fetch", await wire.fetch(topic, isolation=0))


async def test_a_producer_recovers_after_its_transaction_timed_out(broker_at_level, kafka_at_level,
                                                                  finalized_transaction_version):
    def facts(steps):
        assert codes(steps["commit after the timeout"]) == [Errors.PRODUCER_FENCED]
        assert codes(steps["produce after the timeout"]) == [Errors.INVALID_PRODUCER_EPOCH]
        log = steps["fetch"]["responses"][0]["partitions"][0]["records"]
        assert [batch["producer_epoch"] for batch in log] == [0, 1]
        assert log_of(steps["fetch"]) == [b"late", "ABORT"]
        # The coordinator aborts at the finalized version. At 2 its abort keeps epoch 0 as the
        # last epoch, so naming it recovers with epoch 1 and no further bump (Weir answered
        # PRODUCER_FENCED there until broker/txn/coordinator.py kept it). At 1 Kafka's fence
        # forgets the last epoch: the producer is fenced for good.
        recovered = (Errors.NONE, 1) if finalized_transaction_version == 2 else (Errors.PRODUCER_FENCED, -1)
        for step in ("init naming the timed-out epoch", "init naming it again: a retry"):
            assert (steps[step]["error_code"], steps[step]["producer_epoch"]) == recovered
    await differential(broker_at_level, kafka_at_level, recovery_after_a_transaction_timeout, facts=facts)


async def recovery_while_the_transaction_is_open(wire, t):
    topic, txn = "reinit-open", "reinit-open-txn"
    await wire.create_topic(topic)
    await wire.find_coordinator(txn, "transaction")
    answer = t.add("init", await wire.init_producer_id(txn))
    pid, epoch = answer.producer_id, answer.producer_epoch
    t.add("add partition", await wire.add_partitions(txn, pid, epoch, topic))
    t.add("produce", await wire.produce(topic, [b"open"], pid=pid, epoch=epoch, seq=0, txn_id=txn))
    t.add("init naming the current epoch", await wire.init_producer_id(txn, producer_id=pid, producer_epoch=epoch))
    t.add("init without an epoch: a new producer", await wire.init_producer_id(txn))
    t.add("init naming the old epoch: fenced for good", await wire.init_producer_id(
        txn, producer_id=pid, producer_epoch=epoch))
    await wire.wait_for_lso(topic, 2)
    t.add("fetch", await wire.fetch(topic, isolation=0))


async def test_kip_360_init_aborts_the_open_transaction_and_keeps_the_producer(broker_at_level, kafka_at_level,
                                                                               finalized_transaction_version):
    def facts(steps):
        # The open transaction is aborted by the fence of the finalized version (see above): at 2
        # the producer naming its epoch goes on with the abort marker's epoch; at 1 it is fenced.
        recovered = (Errors.NONE, 1) if finalized_transaction_version == 2 else (Errors.PRODUCER_FENCED, -1)
        step = steps["init naming the current epoch"]
        assert (step["error_code"], step["producer_epoch"]) == recovered
        assert steps["init without an epoch: a new producer"]["producer_epoch"] == 2
        assert codes(steps["init naming the old epoch: fenced for good"]) == [Errors.PRODUCER_FENCED]
        assert log_of(steps["fetch"]) == [b"open", "ABORT"]
    await differential(broker_at_level, kafka_at_level, recovery_while_the_transaction_is_open, facts=facts)
