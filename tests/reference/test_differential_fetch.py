"""Read_committed and read_uncommitted fetches around interleaved transactions, from every
offset, on Weir and on Apache Kafka."""

from weir.protocol.errors import Errors
from tests.reference.differential import differential, log_of

TOPIC = "interleaved"
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


async def fetches_around_interleaved_transactions(wire, t):
    await wire.create_topic(TOPIC)
    producers = {}
    for txn in ("aborts", "commits"):
        await wire.find_coordinator(txn, "transaction")
        answer = await wire.init_producer_id(txn)
        producers[txn] = answer.producer_id, answer.producer_epoch
    (a_pid, a_epoch), (c_pid, c_epoch) = producers["aborts"], producers["commits"]
    t.add("plain 0", await wire.produce(TOPIC, [b"p0"]))
    await wire.add_partitions("aborts", a_pid, a_epoch, TOPIC)
    t.add("aborts 1", await wire.produce(TOPIC, [b"a1"], pid=a_pid, epoch=a_epoch, seq=0, txn_id="aborts"))
    await wire.add_partitions("commits", c_pid, c_epoch, TOPIC)
    t.add("commits 2", await wire.produce(TOPIC, [b"c2"], pid=c_pid, epoch=c_epoch, seq=0, txn_id="commits"))
    t.add("aborts 3", await wire.produce(TOPIC, [b"a3"], pid=a_pid, epoch=a_epoch, seq=1, txn_id="aborts"))
    t.add("abort", await wire.end_txn("aborts", a_pid, a_epoch, False))
    await wire.wait_for_lso(TOPIC, 5, isolation=READ_UNCOMMITTED)  # the abort marker at 4
    t.add("plain 5", await wire.produce(TOPIC, [b"p5"]))
    for offset in range(8):
        t.add(f"one open: read_committed from {offset}", await wire.fetch(TOPIC, READ_COMMITTED, offset))
    await wire.end_txn("commits", c_pid, c_epoch, True)
    await wire.wait_for_lso(TOPIC, 7)  # the commit marker at 6
    for offset in (0, 2, 4, 7, 8):
        t.add(f"all closed: read_committed from {offset}", await wire.fetch(TOPIC, READ_COMMITTED, offset))
        t.add(f"all closed: read_uncommitted from {offset}", await wire.fetch(TOPIC, READ_UNCOMMITTED, offset))


def _partition(answer):
    return answer["responses"][0]["partitions"][0]


async def test_fetches_around_interleaved_transactions(broker_at_level, kafka_at_level):
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
    await differential(broker_at_level, kafka_at_level, fetches_around_interleaved_transactions, facts=facts)
