"""An open transaction across a kill -9 of the broker, on Weir and on Apache Kafka."""

from weir.protocol.errors import Errors
import pytest

from tests.reference.differential import Deviation, codes, differential, log_of
from tests.reference.producer import TransactionalProducer

TOPIC, TXN = "crash", "crash-txn"
READ_UNCOMMITTED, READ_COMMITTED = 0, 1

_EPOCHS = ("Weir is one process with no leader elections: every partition's leader epoch, and so "
           "the coordinator epoch its markers carry, stays 0 (broker/log/partition.py LEADER_EPOCH). "
           "Kafka bumps a partition's leader epoch when its restarted node becomes leader again.")


def _restarted(epoch: int) -> bool:
    return epoch > 0  # Kafka's count depends on how often the node restarted


_FETCHED = "committed: read_committed fetch.responses[0].partitions[0].records"
KNOWN_DEVIATIONS = {
    "restarted: latest, read_uncommitted.topics[0].partitions[0].leader_epoch": Deviation(_restarted, 0, _EPOCHS),
    "restarted: latest, read_committed.topics[0].partitions[0].leader_epoch": Deviation(_restarted, 0, _EPOCHS),
    f"{_FETCHED}[2].partition_leader_epoch": Deviation(_restarted, 0, _EPOCHS),
    f"{_FETCHED}[3].partition_leader_epoch": Deviation(_restarted, 0, _EPOCHS),
    f"{_FETCHED}[3].records[0]": Deviation(lambda marker: marker[:2] == (4, "COMMIT") and marker[2] > 0,
                                           (4, "COMMIT", 0), _EPOCHS),
}


async def open_transaction_across_kill_9(wire, t):
    topic, txn = wire.named(TOPIC), wire.named(TXN)
    await wire.create_topic(topic)
    await wire.find_coordinator(txn, "transaction")
    t.add("plain produce", await wire.produce(topic, [b"before"]))
    producer = TransactionalProducer(wire, txn)
    t.add("init", await producer.init())
    t.add("add partition", await producer.add_partitions(topic))
    t.add("produce two in the transaction", await producer.produce(topic, [b"t1", b"t2"], 0))
    await wire.kill_and_restart()
    await wire.wait_for_partitions(topic)
    await wire.find_coordinator(txn, "transaction")
    t.add("restarted: latest, read_uncommitted", await wire.list_offsets(topic, READ_UNCOMMITTED))
    t.add("restarted: latest, read_committed", await wire.list_offsets(topic, READ_COMMITTED))
    t.add("restarted: produce the next in the transaction", await producer.produce(topic, [b"t3"], 2))
    t.add("restarted: produce a retry of the first", await producer.produce(topic, [b"t1", b"t2"], 0))
    t.add("restarted: commit", await producer.end(True))
    await wire.wait_for_lso(topic, 5)
    t.add("committed: read_committed fetch", await wire.fetch(topic, READ_COMMITTED))


# The kill pair finalizing 2 serves a producer at each version (names of their own); the one finalizing 1, version 1.
@pytest.mark.parametrize("kill_pair_level, client_transaction_version", [(2, 2), (2, 1), (1, 1)],
                         indirect=["kill_pair_level"], ids=["tv2", "tv1-client-tv2-finalized", "tv1"], scope="module")
async def test_an_open_transaction_survives_kill_9_and_commits(broker_to_kill_at_level, kafka_to_kill_at_level,
                                                               client_transaction_version):
    def facts(steps):
        offsets = [steps[f"restarted: latest, {level}"]["topics"][0]["partitions"][0]["offset"]
                   for level in ("read_uncommitted", "read_committed")]
        assert offsets == [3, 1]  # the open transaction still holds the last stable offset
        assert codes(steps["restarted: produce the next in the transaction"]) == [Errors.NONE]
        retry = steps["restarted: produce a retry of the first"]["responses"][0]["partition_responses"][0]
        assert (retry["error_code"], retry["base_offset"]) == (Errors.NONE, 1)  # a duplicate, found again
        assert codes(steps["restarted: commit"]) == [Errors.NONE]
        assert log_of(steps["committed: read_committed fetch"]) == [b"before", b"t1", b"t2", b"t3", "COMMIT"]
        assert _restarted(steps["restarted: latest, read_committed"]["topics"][0]["partitions"][0]["leader_epoch"])
        marker = steps["committed: read_committed fetch"]["responses"][0]["partitions"][0]["records"][3]
        bump = 1 if client_transaction_version == 2 else 0  # EndTxn v5 bumps; the marker carries it
        assert marker["producer_epoch"] == steps["init"]["producer_epoch"] + bump
        if client_transaction_version == 2:
            assert steps["restarted: commit"]["producer_epoch"] == steps["init"]["producer_epoch"] + 1
    await differential(broker_to_kill_at_level, kafka_to_kill_at_level, open_transaction_across_kill_9, facts=facts,
                       deviations=KNOWN_DEVIATIONS, client_transaction_version=client_transaction_version)
