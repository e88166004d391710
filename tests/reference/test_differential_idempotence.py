"""An idempotent producer's sequence numbers and epochs, on Weir and on Apache Kafka."""

from weir.protocol.errors import Errors
from tests.reference.differential import codes, differential, log_of

TOPIC = "idempotent"


async def sequence_gaps_and_duplicates(wire, t):
    await wire.create_topic(TOPIC)
    answer = t.add("init", await wire.init_producer_id(None))
    pid, epoch = answer.producer_id, answer.producer_epoch

    async def produce(step, values, seq, producer=pid, producer_epoch=epoch):
        t.add(step, await wire.produce(TOPIC, values, pid=producer, epoch=producer_epoch, seq=seq))

    await produce("seq 0", [b"a"], 0)
    await produce("seq 0 again: duplicate of the last batch", [b"a"], 0)
    await produce("seq 2: a gap", [b"c"], 2)
    await produce("seq 1, two records", [b"b1", b"b2"], 1)
    await produce("seq 0 again: duplicate of an older batch", [b"a"], 0)
    await produce("seq 1 with one record: overlaps, no duplicate", [b"b1"], 1)
    await produce("seq 3", [b"d"], 3)
    await produce("seq 3 again: duplicate", [b"d"], 3)
    await produce("seq 2: behind the last", [b"x"], 2)
    await produce("newer epoch, seq 5", [b"e"], 5, producer_epoch=epoch + 1)
    await produce("newer epoch, seq 0", [b"e"], 0, producer_epoch=epoch + 1)
    await produce("older epoch, seq 4", [b"f"], 4, producer_epoch=epoch)
    await produce("unknown producer, seq 7", [b"g"], 7, producer=pid + 7919)
    await produce("unknown producer, seq 0", [b"g"], 0, producer=pid + 7919)
    await produce("a producer id without a sequence", [b"h"], -1)
    await produce("a producer id with a negative sequence", [b"h"], -5, producer=pid + 7927)
    t.add("fetch", await wire.fetch(TOPIC, isolation=0))


def _base_offset(answer):
    partition = answer["responses"][0]["partition_responses"][0]
    return partition["error_code"], partition["base_offset"]


def _log_start_offset(answer):
    return answer["responses"][0]["partition_responses"][0]["log_start_offset"]


async def test_e_sequence_gap_and_duplicate_on_an_idempotent_producer(any_broker, kafka_broker):
    def facts(steps):
        assert _base_offset(steps["seq 0"]) == (Errors.NONE, 0)
        assert _base_offset(steps["seq 0 again: duplicate of the last batch"]) == (Errors.NONE, 0)
        assert codes(steps["seq 2: a gap"]) == [Errors.OUT_OF_ORDER_SEQUENCE_NUMBER]
        assert _base_offset(steps["seq 1, two records"]) == (Errors.NONE, 1)
        assert _base_offset(steps["seq 0 again: duplicate of an older batch"]) == (Errors.NONE, 0)
        assert codes(steps["older epoch, seq 4"]) == [Errors.INVALID_PRODUCER_EPOCH]
        # Kafka's log answers its own refusals with the partition's log start offset; Weir
        # answered -1 until broker/handlers/produce.py did the same.
        assert [_log_start_offset(steps[step]) for step in ("seq 2: a gap", "older epoch, seq 4")] == [0, 0]
        assert log_of(steps["fetch"])[:4] == [b"a", b"b1", b"b2", b"d"]
        # Weir stored these until Partition.validate_client_batch refused them as Kafka does.
        for step in ("a producer id without a sequence", "a producer id with a negative sequence"):
            assert _base_offset(steps[step]) == (Errors.INVALID_RECORD, -1)
    await differential(any_broker, kafka_broker, sequence_gaps_and_duplicates, facts=facts)
