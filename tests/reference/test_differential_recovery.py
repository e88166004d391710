"""A producer whose transaction the coordinator aborted recovers by InitProducerId naming its
id and epoch (KIP-360), on Weir and on Apache Kafka, where the broker finalizes transaction
version 2; at version 1 the coordinator's fence leaves it fenced for good."""

from weir.protocol.errors import Errors
from tests.reference.differential import codes, differential, log_of
from tests.reference.producer import TransactionalProducer


async def recovery_after_a_transaction_timeout(wire, t):
    topic, txn = wire.named("timed-out"), wire.named("timed-out-txn")
    await wire.create_topic(topic)
    await wire.find_coordinator(txn, "transaction")
    producer = TransactionalProducer(wire, txn)
    answer = t.add("init, 1 s timeout", await producer.init(transaction_timeout_ms=1000))
    pid, epoch = answer.producer_id, answer.producer_epoch
    t.add("add partition", await producer.add_partitions(topic))
    t.add("produce", await producer.produce(topic, [b"late"], 0))
    await wire.wait_for_lso(topic, 2)  # the coordinator's abort marker (cleanup runs every 500 ms)
    t.add("commit after the timeout", await producer.end(True))
    t.add("produce after the timeout", await producer.produce(topic, [b"later"], 1))
    t.add("init naming the timed-out epoch", await producer.init(producer_id=pid, producer_epoch=epoch))
    t.add("init naming it again: a retry", await producer.init(producer_id=pid, producer_epoch=epoch))
    t.add("fetch", await wire.fetch(topic, isolation=0))


async def test_a_producer_recovers_after_its_transaction_timed_out(
        broker_at_level, kafka_at_level, finalized_transaction_version, client_transaction_version):
    def facts(steps):
        # At version 2 the coordinator's abort keeps the timed-out epoch as the last epoch, so an
        # EndTxn v5 at it is judged as a retry of an end that was an abort: a commit is the wrong
        # state. At version 1 it is a fenced producer.
        committed = Errors.PRODUCER_FENCED if client_transaction_version == 1 else Errors.INVALID_TXN_STATE
        assert codes(steps["commit after the timeout"]) == [committed]
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
    await differential(broker_at_level, kafka_at_level, recovery_after_a_transaction_timeout, facts=facts,
                       client_transaction_version=client_transaction_version)


async def recovery_while_the_transaction_is_open(wire, t):
    topic, txn = wire.named("reinit-open"), wire.named("reinit-open-txn")
    await wire.create_topic(topic)
    await wire.find_coordinator(txn, "transaction")
    producer = TransactionalProducer(wire, txn)
    answer = t.add("init", await producer.init())
    pid, epoch = answer.producer_id, answer.producer_epoch
    t.add("add partition", await producer.add_partitions(topic))
    t.add("produce", await producer.produce(topic, [b"open"], 0))
    t.add("init naming the current epoch", await producer.init(producer_id=pid, producer_epoch=epoch))
    t.add("init without an epoch: a new producer", await producer.init())
    t.add("init naming the old epoch: fenced for good", await producer.init(producer_id=pid, producer_epoch=epoch))
    await wire.wait_for_lso(topic, 2)
    t.add("fetch", await wire.fetch(topic, isolation=0))


async def test_kip_360_init_aborts_the_open_transaction_and_keeps_the_producer(
        broker_at_level, kafka_at_level, finalized_transaction_version, client_transaction_version):
    def facts(steps):
        # The open transaction is aborted by the fence of the finalized version (see above): at 2
        # the producer naming its epoch goes on with the abort marker's epoch; at 1 it is fenced.
        recovered = (Errors.NONE, 1) if finalized_transaction_version == 2 else (Errors.PRODUCER_FENCED, -1)
        step = steps["init naming the current epoch"]
        assert (step["error_code"], step["producer_epoch"]) == recovered
        assert steps["init without an epoch: a new producer"]["producer_epoch"] == 2
        assert codes(steps["init naming the old epoch: fenced for good"]) == [Errors.PRODUCER_FENCED]
        assert log_of(steps["fetch"]) == [b"open", "ABORT"]
    await differential(broker_at_level, kafka_at_level, recovery_while_the_transaction_is_open, facts=facts,
                       client_transaction_version=client_transaction_version)


async def init_naming_the_epoch_after_a_commit(wire, t):
    topic, txn = wire.named("reinit-ended"), wire.named("reinit-ended-txn")
    await wire.create_topic(topic, partitions=2)
    await wire.find_coordinator(txn, "transaction")
    producer = TransactionalProducer(wire, txn)
    t.add("init", await producer.init())
    for partition in (0, 1):
        t.add(f"add partition {partition}", await producer.add_partitions(topic, (partition,)))
        t.add(f"produce to partition {partition}", await wire.produce(
            topic, [b"one"], pid=producer.pid, epoch=producer.epoch, seq=0, txn_id=txn, partition=partition,
            version=producer.produce_version))
    t.add("commit", await producer.end(True))  # at version 2 the producer goes on with the bumped epoch
    pid, epoch = producer.pid, producer.epoch
    t.add("init naming the epoch it goes on with", await producer.init(producer_id=pid, producer_epoch=epoch))
    t.add("init naming it again: a retry", await producer.init(producer_id=pid, producer_epoch=epoch))
    t.add("add partition 0 again", await producer.add_partitions(topic))
    t.add("produce after the re-init", await producer.produce(topic, [b"two"], 0))
    t.add("abort", await producer.end(False))
    await wire.wait_for_lso(topic, 4)  # one, its commit, two, its abort
    t.add("fetch", await wire.fetch(topic, isolation=0))


async def test_init_naming_the_epoch_after_a_commit_bumps_it(broker_at_level, kafka_at_level,
                                                             client_transaction_version):
    def facts(steps):
        epoch = steps["init"]["producer_epoch"]
        assert codes(steps["commit"]) == [Errors.NONE]
        after_commit = epoch + (client_transaction_version == 2)  # EndTxn v5 bumps, v3 does not
        for step in ("init naming the epoch it goes on with", "init naming it again: a retry"):
            assert (steps[step]["error_code"], steps[step]["producer_epoch"]) == (Errors.NONE, after_commit + 1)
        assert codes(steps["produce after the re-init"]) == [Errors.NONE]
        assert log_of(steps["fetch"]) == [b"one", "COMMIT", b"two", "ABORT"], log_of(steps["fetch"])
        assert [batch["producer_epoch"] for batch in steps["fetch"]["responses"][0]["partitions"][0]["records"]] == [
            epoch, after_commit, after_commit + 1, after_commit + 1 + (client_transaction_version == 2)]
    await differential(broker_at_level, kafka_at_level, init_naming_the_epoch_after_a_commit, facts=facts,
                       client_transaction_version=client_transaction_version)
