"""Read_committed and read_uncommitted fetches around interleaved transactions, from every
offset, on Weir and on Apache Kafka."""

from weir.protocol.errors import Errors
from tests.reference.differential import differential, log_of
from tests.reference.producer import TransactionalProducer

READ_UNCOMMITTED, READ_COMMITTED = 0, 1


async def fetches_around_interleaved_transactions(wire, t):
    topic = wire.named("interleaved")
    await wire.create_topic(topic)
    aborts = TransactionalProducer(wire, wire.named("aborts"))
    commits = TransactionalProducer(wire, wire.named("commits"))
    for producer in (aborts, commits):
        await wire.find_coordinator(producer.txn_id, "transaction")
        await producer.init()
    t.add("plain 0", await wire.produce(topic, [b"p0"]))
    await aborts.add_partitions(topic)
    t.add("aborts 1", await aborts.produce(topic, [b"a1"], 0))
    await commits.add_partitions(topic)
    t.add("commits 2", await commits.produce(topic, [b"c2"], 0))
    t.add("aborts 3", await aborts.produce(topic, [b"a3"], 1))
    t.add("abort", await aborts.end(False))
    await wire.wait_for_lso(topic, 5, isolation=READ_UNCOMMITTED)  # the abort marker at 4
    t.add("plain 5", await wire.produce(topic, [b"p5"]))
    for offset in range(8):
        t.add(f"one open: read_committed from {offset}", await wire.fetch(topic, READ_COMMITTED, offset))
    t.add("commit", await commits.end(True))
    await wire.wait_for_lso(topic, 7)  # the commit marker at 6
    for offset in (0, 2, 4, 7, 8):
        t.add(f"all closed: read_committed from {offset}", await wire.fetch(topic, READ_COMMITTED, offset))
        t.add(f"all closed: read_uncommitted from {offset}", await wire.fetch(topic, READ_UNCOMMITTED, offset))


def _partition(answer):
    return answer["responses"][0]["partitions"][0]


async def test_fetches_around_interleaved_transactions(broker_at_level, kafka_at_level, client_transaction_version):
    def facts(steps):
        open_from_0 = _partition(steps["one open: read_committed from 0"])
        assert (open_from_0["high_watermark"], open_from_0["last_stable_offset"]) == (6, 2)
        assert log_of(steps["one open: read_committed from 0"]) == [b"p0", b"a1"]  # up to the LSO, whole batches
        assert [a["first_offset"] for a in open_from_0["aborted_transactions"]] == [1]
        beyond = _partition(steps["one open: read_committed from 7"])
        # Weir answered [] here until broker/handlers/fetch.py answered null, as Kafka does.
        assert (beyond["error_code"], beyond["aborted_transactions"]) == (Errors.OFFSET_OUT_OF_RANGE, None)
        assert log_of(steps["all closed: read_committed from 0"]) == [
            b"p0", b"a1", b"c2", b"a3", "ABORT", b"p5", "COMMIT"]
        assert _partition(steps["all closed: read_uncommitted from 0"])["aborted_transactions"] is None
        # Markers carry the epoch the EndTxn answers: bumped at version 2 (KIP-890), the same at 1.
        batches = _partition(steps["all closed: read_uncommitted from 0"])["records"]
        bump = 1 if client_transaction_version == 2 else 0
        assert batches[4]["producer_epoch"] == batches[1]["producer_epoch"] + bump  # the abort marker
        assert batches[6]["producer_epoch"] == batches[2]["producer_epoch"] + bump  # the commit marker
    await differential(broker_at_level, kafka_at_level, fetches_around_interleaved_transactions, facts=facts,
                       client_transaction_version=client_transaction_version)
